// Localized error messages for the v3 API. Codes never change between locales; only the human
// `message` does. Each locale's table is a Record over ErrorCode, so adding a code to
// ERROR_STATUS without messages here fails `tsc`.
import type { ErrorCode } from '../errors.ts';

export type Locale = 'en-US' | 'pt-BR' | 'es-ES' | 'fr-FR';

/** Supported locales; the first one is the default. */
export const LOCALES: readonly Locale[] = ['en-US', 'pt-BR', 'es-ES', 'fr-FR'];

const DEFAULT_LOCALE: Locale = 'en-US';

type DetailCode =
  | 'required'
  | 'unknown_field'
  | 'unknown_parameter'
  | 'invalid_type'
  | 'invalid_format'
  | 'invalid_value'
  | 'too_short'
  | 'too_long'
  | 'too_small'
  | 'too_large'
  | 'too_few_items'
  | 'too_many_items'
  | 'invalid_document'
  | 'invalid_email'
  | 'invalid_characters'
  | 'already_exists'
  | 'invalid';

// ---------------------------------------------------------------------------------------------
// Error messages (placeholder-free: the details, Retry-After header etc. carry the specifics)
// ---------------------------------------------------------------------------------------------

const EN_US: Record<ErrorCode, string> = {
  unauthenticated:
    'Authentication is required: the credential is missing, malformed or not recognized.',
  credential_revoked: 'This credential has been revoked.',
  credential_suspended: 'This credential is suspended.',
  credential_expired: 'This credential has expired.',
  ambiguous_credentials:
    'Ambiguous credentials: use a single authentication mode, send each header only once and use an access token, not an ID token.',
  human_context_required:
    'This credential requires human mode: send a user access token along with the API key.',
  invalid_access_token: 'The access token is invalid, expired or revoked.',
  instance_blocked: 'This account is blocked or has been removed.',
  instance_unavailable: 'This account is not available to the API.',
  credential_state_unverifiable: 'The credential state could not be verified. Try again later.',
  permission_denied: 'This credential does not have permission to perform this operation.',
  not_found: 'The requested resource was not found.',
  operation_not_catalogued: 'This route is not a recognized public API operation.',
  not_acceptable: 'The Accept header must allow application/json.',
  unsupported_media_type: 'The Content-Type must be application/json.',
  payload_too_large: 'The request body exceeds the 1 MiB limit.',
  malformed_json: 'The request body is not valid JSON.',
  json_too_deep: 'The JSON body is nested more than 16 levels deep.',
  invalid_utf8: 'The request contains invalid UTF-8.',
  validation_failed: 'The request contains invalid values. See the details.',
  unknown_field: 'The request body contains fields that are not allowed.',
  unknown_parameter: 'The request contains unrecognized parameters.',
  invalid_cursor:
    'The pagination cursor is invalid: it was altered, belongs to another sort order or other filters, or has expired (24 h).',
  method_not_allowed: 'This HTTP method is not allowed for this resource.',
  revision_mismatch: 'The resource has changed: If-Match does not match its current revision.',
  invalid_transition: 'This state change is not allowed from the current state.',
  credential_not_removable:
    'This credential has usage history and cannot be deleted; revoke it instead.',
  delegation_limit_exceeded: 'The delegated policy grants more than the issuing credential has.',
  idempotency_key_required: 'This request requires an Idempotency-Key header.',
  idempotency_key_invalid:
    'The Idempotency-Key must be 1 to 128 characters long: letters, digits, ".", "_", ":" or "-".',
  idempotency_key_reused: 'This Idempotency-Key was already used with a different body or route.',
  idempotency_in_progress: 'A request with this Idempotency-Key is still being processed.',
  result_uncertain:
    'The first attempt with this Idempotency-Key did not record a result. Retry the request.',
  secret_not_replayable: 'The original response contained a secret and cannot be replayed.',
  result_not_replayable: 'The result of the original request is no longer available for replay.',
  operation_type_unknown: 'Unknown operation type.',
  duplicate_item_key: 'Two or more items have the same key.',
  operation_backlog_exceeded: 'Too many pending operations. Try again once some have finished.',
  operation_not_cancelable: 'This operation cannot be canceled in its current state.',
  operation_not_resumable: 'This operation cannot be resumed in its current state.',
  item_invalid: 'One or more items are invalid.',
  too_many_items: 'The request contains too many items.',
  operation_ownership_lost: 'This operation is now being processed by another process.',
  domain_rule_violation: 'The request violates a business rule.',
  http_error: 'The HTTP request is invalid.',
  internal_error: 'An internal error occurred.',
  audit_unavailable:
    'The audit trail could not be recorded, so the request was not confirmed. Try again later.',
  rate_limit_exceeded: 'Too many requests. Try again later.',
  rate_limiter_unavailable: 'The request rate limiter is unavailable. Try again later.',
  state_conflict: 'The request conflicts with the current state of the resource.',
  upload_integrity_mismatch: 'The uploaded file does not match its declared checksum or size.',
  storage_unavailable: 'File storage is unavailable. Try again later.',
  database_unavailable: 'The database did not answer. Try again later.',
  sandbox_only: 'This operation is only available in the sandbox.',
  production_only: 'This operation is only available in production.',
  replica_readonly: 'This instance is a read-only replica.',
  order_set_mismatch: 'The ordering must contain exactly the existing items, each one once.',
  hierarchy_violation: 'This change would create an invalid hierarchy.',
  banner_type_unavailable: 'This banner type is not available.',
  already_exists: 'The resource already exists.',
  plan_limit_reached: 'Your plan limit has been reached.',
  email_recently_sent: 'An email was sent recently. Wait before requesting another one.',
  feature_disabled: 'This feature is disabled.',
  tag_in_use: 'This tag is in use and cannot be removed.',
  template_not_previewable: 'This template cannot be previewed.',
  format_unsupported: 'This format is not supported.',
  human_mode_not_allowed: 'This credential does not allow human mode.',
  admin_not_eligible:
    'The administrator is not linked to this credential, was removed, or ended the session that granted the token.',
  tenant_mismatch: 'The administrator belongs to another account than the credential.',
  too_many_streams: 'Too many open streams. Close one and try again.',
  stream_busy: 'This stream is already in use.',
  cursor_expired: 'The cursor has expired. Start again from the beginning.',
  sandbox_required: 'This operation requires a sandbox.',
  unsupported_resource: 'This resource type is not supported.',
  plan_invalid: 'The plan is invalid.',
  plan_stale: 'The plan is out of date: the data changed since it was created. Create a new plan.',
  plan_expired: 'The plan has expired. Create a new plan.',
  operation_sunset: 'This operation has been retired and is no longer available.',
};

const PT_BR: Record<ErrorCode, string> = {
  unauthenticated:
    'Autenticação necessária: a credencial está ausente, em formato inválido ou não é reconhecida.',
  credential_revoked: 'Esta credencial foi revogada.',
  credential_suspended: 'Esta credencial está suspensa.',
  credential_expired: 'Esta credencial expirou.',
  ambiguous_credentials:
    'Credenciais ambíguas: use um único modo de autenticação, envie cada cabeçalho uma só vez e use um token de acesso, não um ID token.',
  human_context_required:
    'Esta credencial exige o modo humano: envie um token de acesso de usuário junto com a chave de API.',
  invalid_access_token: 'O token de acesso é inválido, expirou ou foi revogado.',
  instance_blocked: 'Esta conta está bloqueada ou foi removida.',
  instance_unavailable: 'Esta conta não está disponível para a API.',
  credential_state_unverifiable:
    'Não foi possível verificar o estado da credencial. Tente novamente mais tarde.',
  permission_denied: 'Esta credencial não tem permissão para realizar esta operação.',
  not_found: 'O recurso solicitado não foi encontrado.',
  operation_not_catalogued: 'Esta rota não é uma operação pública reconhecida da API.',
  not_acceptable: 'O cabeçalho Accept deve permitir application/json.',
  unsupported_media_type: 'O Content-Type deve ser application/json.',
  payload_too_large: 'O corpo da requisição excede o limite de 1 MiB.',
  malformed_json: 'O corpo da requisição não é um JSON válido.',
  json_too_deep: 'O JSON tem mais de 16 níveis de aninhamento.',
  invalid_utf8: 'A requisição contém UTF-8 inválido.',
  validation_failed: 'A requisição contém valores inválidos. Veja os detalhes.',
  unknown_field: 'O corpo da requisição contém campos não permitidos.',
  unknown_parameter: 'A requisição contém parâmetros não reconhecidos.',
  invalid_cursor:
    'O cursor de paginação é inválido: foi alterado, pertence a outra ordenação ou a outros filtros, ou expirou (24 h).',
  method_not_allowed: 'Este método HTTP não é permitido para este recurso.',
  revision_mismatch: 'O recurso foi alterado: o If-Match não corresponde à revisão atual.',
  invalid_transition: 'Esta mudança de estado não é permitida a partir do estado atual.',
  credential_not_removable:
    'Esta credencial tem histórico de uso e não pode ser excluída; revogue-a em vez disso.',
  delegation_limit_exceeded:
    'A política delegada concede mais do que a credencial emissora possui.',
  idempotency_key_required: 'Esta requisição exige o cabeçalho Idempotency-Key.',
  idempotency_key_invalid:
    'A Idempotency-Key deve ter de 1 a 128 caracteres: letras, dígitos, ".", "_", ":" ou "-".',
  idempotency_key_reused: 'Esta Idempotency-Key já foi usada com outro corpo ou outra rota.',
  idempotency_in_progress: 'Uma requisição com esta Idempotency-Key ainda está em processamento.',
  result_uncertain:
    'A primeira tentativa com esta Idempotency-Key não registrou resultado. Repita a requisição.',
  secret_not_replayable: 'A resposta original continha um segredo e não pode ser repetida.',
  result_not_replayable:
    'O resultado da requisição original não está mais disponível para repetição.',
  operation_type_unknown: 'Tipo de operação desconhecido.',
  duplicate_item_key: 'Dois ou mais itens têm a mesma chave.',
  operation_backlog_exceeded:
    'Há operações pendentes demais. Tente novamente quando algumas terminarem.',
  operation_not_cancelable: 'Esta operação não pode ser cancelada no estado atual.',
  operation_not_resumable: 'Esta operação não pode ser retomada no estado atual.',
  item_invalid: 'Um ou mais itens são inválidos.',
  too_many_items: 'A requisição contém itens demais.',
  operation_ownership_lost: 'Esta operação passou a ser processada por outro processo.',
  domain_rule_violation: 'A requisição viola uma regra de negócio.',
  http_error: 'A requisição HTTP é inválida.',
  internal_error: 'Ocorreu um erro interno.',
  audit_unavailable:
    'Não foi possível registrar a trilha de auditoria, então a requisição não foi confirmada. Tente novamente mais tarde.',
  rate_limit_exceeded: 'Requisições demais. Tente novamente mais tarde.',
  rate_limiter_unavailable:
    'O controle de taxa de requisições está indisponível. Tente novamente mais tarde.',
  state_conflict: 'A requisição conflita com o estado atual do recurso.',
  upload_integrity_mismatch:
    'O arquivo enviado não corresponde à soma de verificação ou ao tamanho declarados.',
  storage_unavailable: 'O armazenamento de arquivos está indisponível. Tente novamente mais tarde.',
  database_unavailable: 'O banco de dados não respondeu. Tente novamente mais tarde.',
  sandbox_only: 'Esta operação só está disponível no sandbox.',
  production_only: 'Esta operação só está disponível em produção.',
  replica_readonly: 'Esta instância é uma réplica somente leitura.',
  order_set_mismatch:
    'A ordenação deve conter exatamente os itens existentes, cada um uma única vez.',
  hierarchy_violation: 'Esta alteração criaria uma hierarquia inválida.',
  banner_type_unavailable: 'Este tipo de banner não está disponível.',
  already_exists: 'O recurso já existe.',
  plan_limit_reached: 'O limite do seu plano foi atingido.',
  email_recently_sent: 'Um e-mail foi enviado recentemente. Aguarde antes de solicitar outro.',
  feature_disabled: 'Esta funcionalidade está desativada.',
  tag_in_use: 'Esta tag está em uso e não pode ser removida.',
  template_not_previewable: 'Não é possível pré-visualizar este modelo.',
  format_unsupported: 'Este formato não é suportado.',
  human_mode_not_allowed: 'Esta credencial não permite o modo humano.',
  admin_not_eligible:
    'O administrador não está vinculado a esta credencial, foi removido ou encerrou a sessão que concedeu o token.',
  tenant_mismatch: 'O administrador pertence a uma conta diferente da credencial.',
  too_many_streams: 'Há streams abertos demais. Feche um e tente novamente.',
  stream_busy: 'Este stream já está em uso.',
  cursor_expired: 'O cursor expirou. Recomece do início.',
  sandbox_required: 'Esta operação exige um sandbox.',
  unsupported_resource: 'Este tipo de recurso não é suportado.',
  plan_invalid: 'O plano é inválido.',
  plan_stale:
    'O plano está desatualizado: os dados mudaram desde que ele foi criado. Crie um novo plano.',
  plan_expired: 'O plano expirou. Crie um novo plano.',
  operation_sunset: 'Esta operação foi descontinuada e não está mais disponível.',
};

const ES_ES: Record<ErrorCode, string> = {
  unauthenticated:
    'Se requiere autenticación: la credencial falta, tiene un formato no válido o no se reconoce.',
  credential_revoked: 'Esta credencial ha sido revocada.',
  credential_suspended: 'Esta credencial está suspendida.',
  credential_expired: 'Esta credencial ha caducado.',
  ambiguous_credentials:
    'Credenciales ambiguas: use un único modo de autenticación, envíe cada cabecera una sola vez y use un token de acceso, no un token de ID.',
  human_context_required:
    'Esta credencial requiere el modo humano: envíe un token de acceso de usuario junto con la clave de API.',
  invalid_access_token: 'El token de acceso no es válido, ha caducado o ha sido revocado.',
  instance_blocked: 'Esta cuenta está bloqueada o ha sido eliminada.',
  instance_unavailable: 'Esta cuenta no está disponible para la API.',
  credential_state_unverifiable:
    'No se ha podido verificar el estado de la credencial. Inténtelo de nuevo más tarde.',
  permission_denied: 'Esta credencial no tiene permiso para realizar esta operación.',
  not_found: 'No se ha encontrado el recurso solicitado.',
  operation_not_catalogued: 'Esta ruta no es una operación pública reconocida de la API.',
  not_acceptable: 'La cabecera Accept debe admitir application/json.',
  unsupported_media_type: 'El Content-Type debe ser application/json.',
  payload_too_large: 'El cuerpo de la solicitud supera el límite de 1 MiB.',
  malformed_json: 'El cuerpo de la solicitud no es un JSON válido.',
  json_too_deep: 'El JSON tiene más de 16 niveles de anidamiento.',
  invalid_utf8: 'La solicitud contiene UTF-8 no válido.',
  validation_failed: 'La solicitud contiene valores no válidos. Consulte los detalles.',
  unknown_field: 'El cuerpo de la solicitud contiene campos no permitidos.',
  unknown_parameter: 'La solicitud contiene parámetros no reconocidos.',
  invalid_cursor:
    'El cursor de paginación no es válido: se ha modificado, corresponde a otra ordenación o a otros filtros, o ha caducado (24 h).',
  method_not_allowed: 'Este método HTTP no está permitido para este recurso.',
  revision_mismatch: 'El recurso ha cambiado: If-Match no coincide con su revisión actual.',
  invalid_transition: 'Este cambio de estado no está permitido desde el estado actual.',
  credential_not_removable:
    'Esta credencial tiene historial de uso y no se puede eliminar; revóquela en su lugar.',
  delegation_limit_exceeded:
    'La política delegada concede más de lo que tiene la credencial emisora.',
  idempotency_key_required: 'Esta solicitud requiere la cabecera Idempotency-Key.',
  idempotency_key_invalid:
    'La Idempotency-Key debe tener entre 1 y 128 caracteres: letras, dígitos, ".", "_", ":" o "-".',
  idempotency_key_reused: 'Esta Idempotency-Key ya se ha usado con otro cuerpo u otra ruta.',
  idempotency_in_progress: 'Una solicitud con esta Idempotency-Key todavía se está procesando.',
  result_uncertain:
    'El primer intento con esta Idempotency-Key no registró ningún resultado. Repita la solicitud.',
  secret_not_replayable: 'La respuesta original contenía un secreto y no se puede repetir.',
  result_not_replayable:
    'El resultado de la solicitud original ya no está disponible para repetirse.',
  operation_type_unknown: 'Tipo de operación desconocido.',
  duplicate_item_key: 'Dos o más elementos tienen la misma clave.',
  operation_backlog_exceeded:
    'Hay demasiadas operaciones pendientes. Inténtelo de nuevo cuando terminen algunas.',
  operation_not_cancelable: 'Esta operación no se puede cancelar en su estado actual.',
  operation_not_resumable: 'Esta operación no se puede reanudar en su estado actual.',
  item_invalid: 'Uno o más elementos no son válidos.',
  too_many_items: 'La solicitud contiene demasiados elementos.',
  operation_ownership_lost: 'Esta operación ha pasado a procesarla otro proceso.',
  domain_rule_violation: 'La solicitud infringe una regla de negocio.',
  http_error: 'La solicitud HTTP no es válida.',
  internal_error: 'Se ha producido un error interno.',
  audit_unavailable:
    'No se ha podido registrar el rastro de auditoría, por lo que la solicitud no se ha confirmado. Inténtelo de nuevo más tarde.',
  rate_limit_exceeded: 'Demasiadas solicitudes. Inténtelo de nuevo más tarde.',
  rate_limiter_unavailable:
    'El control de frecuencia de solicitudes no está disponible. Inténtelo de nuevo más tarde.',
  state_conflict: 'La solicitud entra en conflicto con el estado actual del recurso.',
  upload_integrity_mismatch:
    'El archivo subido no coincide con la suma de comprobación o el tamaño declarados.',
  storage_unavailable:
    'El almacenamiento de archivos no está disponible. Inténtelo de nuevo más tarde.',
  database_unavailable: 'La base de datos no ha respondido. Inténtelo de nuevo más tarde.',
  sandbox_only: 'Esta operación solo está disponible en el sandbox.',
  production_only: 'Esta operación solo está disponible en producción.',
  replica_readonly: 'Esta instancia es una réplica de solo lectura.',
  order_set_mismatch:
    'La ordenación debe contener exactamente los elementos existentes, cada uno una sola vez.',
  hierarchy_violation: 'Este cambio crearía una jerarquía no válida.',
  banner_type_unavailable: 'Este tipo de banner no está disponible.',
  already_exists: 'El recurso ya existe.',
  plan_limit_reached: 'Se ha alcanzado el límite de su plan.',
  email_recently_sent:
    'Se ha enviado un correo electrónico recientemente. Espere antes de solicitar otro.',
  feature_disabled: 'Esta funcionalidad está desactivada.',
  tag_in_use: 'Esta etiqueta está en uso y no se puede eliminar.',
  template_not_previewable: 'No se puede previsualizar esta plantilla.',
  format_unsupported: 'Este formato no es compatible.',
  human_mode_not_allowed: 'Esta credencial no permite el modo humano.',
  admin_not_eligible:
    'El administrador no está vinculado a esta credencial, fue eliminado o cerró la sesión que concedió el token.',
  tenant_mismatch: 'El administrador pertenece a una cuenta distinta de la credencial.',
  too_many_streams: 'Hay demasiados streams abiertos. Cierre uno e inténtelo de nuevo.',
  stream_busy: 'Este stream ya está en uso.',
  cursor_expired: 'El cursor ha caducado. Vuelva a empezar desde el principio.',
  sandbox_required: 'Esta operación requiere un sandbox.',
  unsupported_resource: 'Este tipo de recurso no es compatible.',
  plan_invalid: 'El plan no es válido.',
  plan_stale:
    'El plan está desactualizado: los datos han cambiado desde que se creó. Cree un plan nuevo.',
  plan_expired: 'El plan ha caducado. Cree un plan nuevo.',
  operation_sunset: 'Esta operación se ha retirado y ya no está disponible.',
};

const FR_FR: Record<ErrorCode, string> = {
  unauthenticated: "Authentification requise : l'identifiant est absent, mal formé ou inconnu.",
  credential_revoked: 'Cet identifiant a été révoqué.',
  credential_suspended: 'Cet identifiant est suspendu.',
  credential_expired: 'Cet identifiant a expiré.',
  ambiguous_credentials:
    "Identifiants ambigus : utilisez un seul mode d'authentification, envoyez chaque en-tête une seule fois et utilisez un jeton d'accès, pas un jeton d'identité.",
  human_context_required:
    "Cet identifiant exige le mode humain : envoyez un jeton d'accès utilisateur avec la clé d'API.",
  invalid_access_token: "Le jeton d'accès est invalide, expiré ou révoqué.",
  instance_blocked: 'Ce compte est bloqué ou a été supprimé.',
  instance_unavailable: "Ce compte n'est pas disponible pour l'API.",
  credential_state_unverifiable:
    "Impossible de vérifier l'état de l'identifiant. Réessayez plus tard.",
  permission_denied: "Cet identifiant n'a pas l'autorisation d'effectuer cette opération.",
  not_found: 'La ressource demandée est introuvable.',
  operation_not_catalogued: "Cette route n'est pas une opération publique reconnue de l'API.",
  not_acceptable: "L'en-tête Accept doit autoriser application/json.",
  unsupported_media_type: 'Le Content-Type doit être application/json.',
  payload_too_large: 'Le corps de la requête dépasse la limite de 1 Mio.',
  malformed_json: "Le corps de la requête n'est pas un JSON valide.",
  json_too_deep: "Le JSON comporte plus de 16 niveaux d'imbrication.",
  invalid_utf8: 'La requête contient des séquences UTF-8 invalides.',
  validation_failed: 'La requête contient des valeurs invalides. Consultez les détails.',
  unknown_field: 'Le corps de la requête contient des champs non autorisés.',
  unknown_parameter: 'La requête contient des paramètres non reconnus.',
  invalid_cursor:
    "Le curseur de pagination est invalide : il a été modifié, correspond à un autre tri ou à d'autres filtres, ou a expiré (24 h).",
  method_not_allowed: "Cette méthode HTTP n'est pas autorisée pour cette ressource.",
  revision_mismatch: 'La ressource a changé : If-Match ne correspond pas à sa révision actuelle.',
  invalid_transition: "Ce changement d'état n'est pas autorisé depuis l'état actuel.",
  credential_not_removable:
    "Cet identifiant a un historique d'utilisation et ne peut pas être supprimé ; révoquez-le plutôt.",
  delegation_limit_exceeded:
    "La politique déléguée accorde plus de droits que l'identifiant émetteur n'en possède.",
  idempotency_key_required: "Cette requête exige l'en-tête Idempotency-Key.",
  idempotency_key_invalid:
    "L'Idempotency-Key doit comporter de 1 à 128 caractères : lettres, chiffres, « . », « _ », « : » ou « - ».",
  idempotency_key_reused:
    'Cette Idempotency-Key a déjà été utilisée avec un autre corps ou une autre route.',
  idempotency_in_progress:
    'Une requête avec cette Idempotency-Key est encore en cours de traitement.',
  result_uncertain:
    "La première tentative avec cette Idempotency-Key n'a enregistré aucun résultat. Renvoyez la requête.",
  secret_not_replayable: 'La réponse originale contenait un secret et ne peut pas être rejouée.',
  result_not_replayable:
    "Le résultat de la requête originale n'est plus disponible pour être rejoué.",
  operation_type_unknown: "Type d'opération inconnu.",
  duplicate_item_key: 'Plusieurs éléments ont la même clé.',
  operation_backlog_exceeded:
    "Trop d'opérations en attente. Réessayez lorsque certaines seront terminées.",
  operation_not_cancelable: 'Cette opération ne peut pas être annulée dans son état actuel.',
  operation_not_resumable: 'Cette opération ne peut pas être reprise dans son état actuel.',
  item_invalid: 'Un ou plusieurs éléments sont invalides.',
  too_many_items: "La requête contient trop d'éléments.",
  operation_ownership_lost: 'Cette opération est désormais traitée par un autre processus.',
  domain_rule_violation: 'La requête enfreint une règle métier.',
  http_error: 'La requête HTTP est invalide.',
  internal_error: 'Une erreur interne est survenue.',
  audit_unavailable:
    "La piste d'audit n'a pas pu être enregistrée, la requête n'a donc pas été confirmée. Réessayez plus tard.",
  rate_limit_exceeded: 'Trop de requêtes. Réessayez plus tard.',
  rate_limiter_unavailable:
    'La limitation du débit des requêtes est indisponible. Réessayez plus tard.',
  state_conflict: "La requête est en conflit avec l'état actuel de la ressource.",
  upload_integrity_mismatch:
    'Le fichier envoyé ne correspond pas à la somme de contrôle ou à la taille déclarées.',
  storage_unavailable: 'Le stockage de fichiers est indisponible. Réessayez plus tard.',
  database_unavailable: "La base de données n'a pas répondu. Réessayez plus tard.",
  sandbox_only: "Cette opération n'est disponible que dans le bac à sable.",
  production_only: "Cette opération n'est disponible qu'en production.",
  replica_readonly: 'Cette instance est une réplique en lecture seule.',
  order_set_mismatch:
    "L'ordre doit contenir exactement les éléments existants, chacun une seule fois.",
  hierarchy_violation: 'Cette modification créerait une hiérarchie invalide.',
  banner_type_unavailable: "Ce type de bannière n'est pas disponible.",
  already_exists: 'La ressource existe déjà.',
  plan_limit_reached: 'La limite de votre forfait est atteinte.',
  email_recently_sent: "Un e-mail a été envoyé récemment. Patientez avant d'en demander un autre.",
  feature_disabled: 'Cette fonctionnalité est désactivée.',
  tag_in_use: 'Cette étiquette est utilisée et ne peut pas être supprimée.',
  template_not_previewable: 'Ce modèle ne peut pas être prévisualisé.',
  format_unsupported: "Ce format n'est pas pris en charge.",
  human_mode_not_allowed: "Cet identifiant n'autorise pas le mode humain.",
  admin_not_eligible:
    "L'administrateur n'est pas lié à cet identifiant, a été supprimé ou a fermé la session qui a accordé le jeton.",
  tenant_mismatch: "L'administrateur appartient à un autre compte que l'identifiant.",
  too_many_streams: 'Trop de flux ouverts. Fermez-en un et réessayez.',
  stream_busy: 'Ce flux est déjà utilisé.',
  cursor_expired: 'Le curseur a expiré. Recommencez depuis le début.',
  sandbox_required: 'Cette opération nécessite un bac à sable.',
  unsupported_resource: "Ce type de ressource n'est pas pris en charge.",
  plan_invalid: 'Le plan est invalide.',
  plan_stale:
    'Le plan est obsolète : les données ont changé depuis sa création. Créez un nouveau plan.',
  plan_expired: 'Le plan a expiré. Créez un nouveau plan.',
  operation_sunset: "Cette opération a été retirée et n'est plus disponible.",
};

const ERROR_MESSAGES: Record<Locale, Record<ErrorCode, string>> = {
  'en-US': EN_US,
  'pt-BR': PT_BR,
  'es-ES': ES_ES,
  'fr-FR': FR_FR,
};

// ---------------------------------------------------------------------------------------------
// Validation detail messages (details[].message); the field name travels in details[].field
// ---------------------------------------------------------------------------------------------

const DETAIL_MESSAGES: Record<Locale, Record<DetailCode, string>> = {
  'en-US': {
    required: 'This field is required.',
    unknown_field: 'This field is not allowed.',
    unknown_parameter: 'This parameter is not recognized.',
    invalid_type: 'Must be of type {type}.',
    invalid_format: 'Must match the {format} format.',
    invalid_value: 'Must be one of: {values}.',
    too_short: 'Must be at least {limit} characters long.',
    too_long: 'Must be at most {limit} characters long.',
    too_small: 'Must be greater than or equal to {limit}.',
    too_large: 'Must be less than or equal to {limit}.',
    too_few_items: 'Must contain at least {limit} items.',
    too_many_items: 'Must contain at most {limit} items.',
    invalid_document: 'Invalid CPF: the check digits do not match.',
    invalid_email: 'Must be a valid email address.',
    invalid_characters: 'Must not contain the NUL character (U+0000).',
    already_exists: 'This value is already in use.',
    invalid: 'This value is invalid.',
  },
  'pt-BR': {
    required: 'Este campo é obrigatório.',
    unknown_field: 'Este campo não é permitido.',
    unknown_parameter: 'Este parâmetro não é reconhecido.',
    invalid_type: 'Deve ser do tipo {type}.',
    invalid_format: 'Deve estar no formato {format}.',
    invalid_value: 'Deve ser um destes valores: {values}.',
    too_short: 'Deve ter pelo menos {limit} caracteres.',
    too_long: 'Deve ter no máximo {limit} caracteres.',
    too_small: 'Deve ser maior ou igual a {limit}.',
    too_large: 'Deve ser menor ou igual a {limit}.',
    too_few_items: 'Deve conter pelo menos {limit} itens.',
    too_many_items: 'Deve conter no máximo {limit} itens.',
    invalid_document: 'CPF inválido: os dígitos verificadores não conferem.',
    invalid_email: 'Deve ser um endereço de e-mail válido.',
    invalid_characters: 'Não pode conter o caractere NUL (U+0000).',
    already_exists: 'Este valor já está em uso.',
    invalid: 'Este valor é inválido.',
  },
  'es-ES': {
    required: 'Este campo es obligatorio.',
    unknown_field: 'Este campo no está permitido.',
    unknown_parameter: 'Este parámetro no se reconoce.',
    invalid_type: 'Debe ser de tipo {type}.',
    invalid_format: 'Debe tener el formato {format}.',
    invalid_value: 'Debe ser uno de estos valores: {values}.',
    too_short: 'Debe tener al menos {limit} caracteres.',
    too_long: 'Debe tener como máximo {limit} caracteres.',
    too_small: 'Debe ser mayor o igual que {limit}.',
    too_large: 'Debe ser menor o igual que {limit}.',
    too_few_items: 'Debe contener al menos {limit} elementos.',
    too_many_items: 'Debe contener como máximo {limit} elementos.',
    invalid_document: 'CPF no válido: los dígitos de control no coinciden.',
    invalid_email: 'Debe ser una dirección de correo electrónico válida.',
    invalid_characters: 'No debe contener el carácter NUL (U+0000).',
    already_exists: 'Este valor ya está en uso.',
    invalid: 'Este valor no es válido.',
  },
  'fr-FR': {
    required: 'Ce champ est obligatoire.',
    unknown_field: "Ce champ n'est pas autorisé.",
    unknown_parameter: "Ce paramètre n'est pas reconnu.",
    invalid_type: 'Doit être de type {type}.',
    invalid_format: 'Doit respecter le format {format}.',
    invalid_value: "Doit être l'une des valeurs suivantes : {values}.",
    too_short: 'Doit comporter au moins {limit} caractères.',
    too_long: 'Doit comporter au plus {limit} caractères.',
    too_small: 'Doit être supérieur ou égal à {limit}.',
    too_large: 'Doit être inférieur ou égal à {limit}.',
    too_few_items: 'Doit contenir au moins {limit} éléments.',
    too_many_items: 'Doit contenir au plus {limit} éléments.',
    invalid_document: 'CPF invalide : les chiffres de contrôle ne correspondent pas.',
    invalid_email: 'Doit être une adresse e-mail valide.',
    invalid_characters: 'Ne doit pas contenir le caractère NUL (U+0000).',
    already_exists: 'Cette valeur est déjà utilisée.',
    invalid: 'Cette valeur est invalide.',
  },
};

// ---------------------------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------------------------

/** Replaces `{name}` with params[name]; placeholders without a value are left as they are. */
function interpolate(template: string, params?: Record<string, string | number>): string {
  if (!params) return template;
  return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) =>
    Object.hasOwn(params, name) ? String(params[name]) : whole,
  );
}

function tableFor<T>(tables: Record<Locale, T>, locale: Locale): T {
  return Object.hasOwn(tables, locale) ? tables[locale] : tables[DEFAULT_LOCALE];
}

/** Message for an error code; `{name}` placeholders are replaced from params. Unknown code -> the internal_error message. */
export function errorMessage(
  code: string,
  locale: Locale,
  params?: Record<string, string | number>,
): string {
  const table = tableFor(ERROR_MESSAGES, locale);
  const template = Object.hasOwn(table, code) ? table[code as ErrorCode] : table.internal_error;
  return interpolate(template, params);
}

/** Message for a validation detail code; unknown detail code -> a generic "value is invalid" message. */
export function detailMessage(
  code: string,
  locale: Locale,
  params?: Record<string, string | number>,
): string {
  const table = tableFor(DETAIL_MESSAGES, locale);
  const template = Object.hasOwn(table, code) ? table[code as DetailCode] : table.invalid;
  return interpolate(template, params);
}

// ---------------------------------------------------------------------------------------------
// Accept-Language negotiation (RFC 9110 §12.5.4 with RFC 4647 matching)
// ---------------------------------------------------------------------------------------------

const LANGUAGE_RANGE = /^(?:\*|[a-z]{1,8}(?:-[a-z0-9]{1,8})*)$/;
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;
const MAX_HEADER_LENGTH = 4096;

/**
 * RFC 9110 Accept-Language negotiation with q-values. Each supported locale takes the weight of
 * the most specific range that matches it: the exact tag ('pt-br'), then the bare language ('pt'),
 * then another region of the same language ('pt-pt', 'es-mx', 'fr-ca', 'en-gb'; only positive
 * weights count, so 'pt-PT;q=0' does not exclude pt-BR), then '*'. A weight of 0 excludes.
 * Highest weight wins; ties go to the range listed first, then to en-US.
 * Missing, garbage or fully-excluded headers give en-US. Never throws.
 */
export function negotiateLocale(header: string | undefined): Locale {
  if (typeof header !== 'string' || header.length === 0) return DEFAULT_LOCALE;
  // Parse: [{ tag, q, position }], silently skipping malformed entries.
  const ranges: { tag: string; q: number; position: number }[] = [];
  const entries = header.slice(0, MAX_HEADER_LENGTH).split(',');
  for (let position = 0; position < entries.length; position++) {
    const [rawTag = '', ...rawParams] = entries[position]!.split(';');
    const tag = rawTag.trim().toLowerCase().replace(/_/g, '-');
    if (!LANGUAGE_RANGE.test(tag)) continue;
    let q = 1;
    let valid = true;
    for (const rawParam of rawParams) {
      const param = rawParam.trim().toLowerCase();
      if (!param.startsWith('q=')) continue;
      const value = param.slice(2).trim();
      if (!QVALUE.test(value)) valid = false;
      else q = Number(value);
    }
    if (valid) ranges.push({ tag, q, position });
  }

  let best: { locale: Locale; q: number; position: number } | undefined;
  for (const locale of LOCALES) {
    const exact = locale.toLowerCase();
    const language = exact.slice(0, 2);
    let match: { q: number; position: number } | undefined;
    let specificity = -1;
    for (const range of ranges) {
      let level: number;
      if (range.tag === exact) level = 3;
      else if (range.tag === language) level = 2;
      else if (range.tag.startsWith(`${language}-`) && range.q > 0) level = 1;
      else if (range.tag === '*') level = 0;
      else continue;
      // Most specific range wins; within one level, the highest weight.
      if (level > specificity || (level === specificity && match && range.q > match.q)) {
        specificity = level;
        match = range;
      }
    }
    if (!match || match.q <= 0) continue;
    if (!best || match.q > best.q || (match.q === best.q && match.position < best.position)) {
      best = { locale, q: match.q, position: match.position };
    }
  }
  return best?.locale ?? DEFAULT_LOCALE;
}
