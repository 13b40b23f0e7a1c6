// Texts of the sign-in, two-factor, consent and error pages, in the API's locales. Each locale is a
// Record over the same keys, so a missing translation fails `tsc`.
import type { Locale } from '../i18n/messages.ts';

type Key =
  | 'sign_in_title'
  | 'email'
  | 'password'
  | 'sign_in_button'
  | 'sign_in_failed'
  | 'two_factor_title'
  | 'two_factor_help'
  | 'code_label'
  | 'verify_button'
  | 'two_factor_failed'
  | 'throttled'
  | 'csrf_failed'
  | 'session_expired'
  | 'signed_out'
  | 'consent_title'
  | 'consent_intro'
  | 'consent_admin'
  | 'consent_account'
  | 'consent_grants'
  | 'grant_api'
  | 'grant_duration'
  | 'grant_end'
  | 'consent_redirect'
  | 'approve'
  | 'deny'
  | 'signed_in_title'
  | 'signed_in_as'
  | 'sign_out_button'
  | 'error_title'
  | 'err_plain'
  | 'err_duplicate'
  | 'err_client_missing'
  | 'err_client_unknown'
  | 'err_redirect_missing'
  | 'err_redirect_invalid';

const EN: Record<Key, string> = {
  sign_in_title: 'Administrator sign-in',
  email: 'Email',
  password: 'Password',
  sign_in_button: 'Continue',
  sign_in_failed: 'The email or password is incorrect.',
  two_factor_title: 'Two-factor authentication',
  two_factor_help: 'Enter the 6-digit code from your authenticator app.',
  code_label: 'Authentication code',
  verify_button: 'Verify',
  two_factor_failed: 'This code is not valid. Wait for a new code and try again.',
  throttled: 'Too many attempts. Try again in {minutes} minutes.',
  csrf_failed: 'This form has expired. Go back, reload the page and try again.',
  session_expired: 'Your sign-in has expired. Sign in again.',
  signed_out: 'You have signed out. Access granted to applications in that session has ended.',
  consent_title: 'Authorize access',
  consent_intro: '{client} is asking to use the School Platform API on your behalf.',
  consent_admin: 'Administrator',
  consent_account: 'Account',
  consent_grants: 'If you approve, it can:',
  grant_api:
    'call API v3 as you, together with an API credential you are linked to (both are always required);',
  grant_duration: 'keep access for 1 hour at a time, renewed automatically for up to 30 days;',
  grant_end: 'until you sign out here, it signs out, or you are unlinked from the credential.',
  consent_redirect: 'You will then return to {uri}, an application on this computer.',
  approve: 'Approve',
  deny: 'Deny',
  signed_in_title: 'Signed in',
  signed_in_as: 'Signed in as {email}.',
  sign_out_button: 'Sign out',
  error_title: 'Authorization request rejected',
  err_plain: 'The PKCE method "plain" is not accepted. Use S256.',
  err_duplicate: 'The parameter {name} was sent more than once.',
  err_client_missing: 'The request does not name a client (client_id).',
  err_client_unknown: 'Unknown client.',
  err_redirect_missing: 'The request has no redirect_uri.',
  err_redirect_invalid:
    'This redirect_uri is not allowed. Only http://127.0.0.1:{port}/callback and http://[::1]:{port}/callback are accepted.',
};

const PT: Record<Key, string> = {
  sign_in_title: 'Acesso do administrador',
  email: 'E-mail',
  password: 'Senha',
  sign_in_button: 'Continuar',
  sign_in_failed: 'O e-mail ou a senha estão incorretos.',
  two_factor_title: 'Autenticação em dois fatores',
  two_factor_help: 'Digite o código de 6 dígitos do seu aplicativo autenticador.',
  code_label: 'Código de autenticação',
  verify_button: 'Verificar',
  two_factor_failed: 'Este código não é válido. Aguarde um novo código e tente novamente.',
  throttled: 'Muitas tentativas. Tente novamente em {minutes} minutos.',
  csrf_failed: 'Este formulário expirou. Volte, recarregue a página e tente novamente.',
  session_expired: 'Seu acesso expirou. Entre novamente.',
  signed_out: 'Você saiu. O acesso concedido a aplicativos nessa sessão foi encerrado.',
  consent_title: 'Autorizar acesso',
  consent_intro: '{client} pede para usar a API da School Platform em seu nome.',
  consent_admin: 'Administrador',
  consent_account: 'Conta',
  consent_grants: 'Se você aprovar, ele poderá:',
  grant_api:
    'chamar a API v3 como você, junto com uma credencial de API à qual você está vinculado (as duas são sempre exigidas);',
  grant_duration:
    'manter o acesso por 1 hora de cada vez, renovado automaticamente por até 30 dias;',
  grant_end: 'até você sair aqui, ele sair ou você ser desvinculado da credencial.',
  consent_redirect: 'Depois você voltará para {uri}, um aplicativo neste computador.',
  approve: 'Aprovar',
  deny: 'Recusar',
  signed_in_title: 'Conectado',
  signed_in_as: 'Conectado como {email}.',
  sign_out_button: 'Sair',
  error_title: 'Pedido de autorização recusado',
  err_plain: 'O método PKCE "plain" não é aceito. Use S256.',
  err_duplicate: 'O parâmetro {name} foi enviado mais de uma vez.',
  err_client_missing: 'O pedido não indica um cliente (client_id).',
  err_client_unknown: 'Cliente desconhecido.',
  err_redirect_missing: 'O pedido não tem redirect_uri.',
  err_redirect_invalid:
    'Este redirect_uri não é permitido. Só são aceitos http://127.0.0.1:{port}/callback e http://[::1]:{port}/callback.',
};

const ES: Record<Key, string> = {
  sign_in_title: 'Acceso de administrador',
  email: 'Correo electrónico',
  password: 'Contraseña',
  sign_in_button: 'Continuar',
  sign_in_failed: 'El correo electrónico o la contraseña no son correctos.',
  two_factor_title: 'Autenticación en dos pasos',
  two_factor_help: 'Introduce el código de 6 dígitos de tu aplicación de autenticación.',
  code_label: 'Código de autenticación',
  verify_button: 'Verificar',
  two_factor_failed: 'Este código no es válido. Espera un código nuevo y vuelve a intentarlo.',
  throttled: 'Demasiados intentos. Vuelve a intentarlo en {minutes} minutos.',
  csrf_failed: 'Este formulario ha caducado. Vuelve atrás, recarga la página e inténtalo de nuevo.',
  session_expired: 'Tu acceso ha caducado. Vuelve a iniciar sesión.',
  signed_out:
    'Has cerrado la sesión. El acceso concedido a aplicaciones en esa sesión ha terminado.',
  consent_title: 'Autorizar acceso',
  consent_intro: '{client} solicita usar la API de School Platform en tu nombre.',
  consent_admin: 'Administrador',
  consent_account: 'Cuenta',
  consent_grants: 'Si lo apruebas, podrá:',
  grant_api:
    'llamar a la API v3 como tú, junto con una credencial de API a la que estás vinculado (siempre se exigen ambas);',
  grant_duration:
    'mantener el acceso durante 1 hora cada vez, renovado automáticamente hasta 30 días;',
  grant_end: 'hasta que cierres la sesión aquí, la cierre él o se te desvincule de la credencial.',
  consent_redirect: 'Después volverás a {uri}, una aplicación de este equipo.',
  approve: 'Aprobar',
  deny: 'Rechazar',
  signed_in_title: 'Sesión iniciada',
  signed_in_as: 'Sesión iniciada como {email}.',
  sign_out_button: 'Cerrar sesión',
  error_title: 'Solicitud de autorización rechazada',
  err_plain: 'El método PKCE "plain" no se acepta. Usa S256.',
  err_duplicate: 'El parámetro {name} se envió más de una vez.',
  err_client_missing: 'La solicitud no indica un cliente (client_id).',
  err_client_unknown: 'Cliente desconocido.',
  err_redirect_missing: 'La solicitud no tiene redirect_uri.',
  err_redirect_invalid:
    'Este redirect_uri no está permitido. Solo se aceptan http://127.0.0.1:{port}/callback y http://[::1]:{port}/callback.',
};

const FR: Record<Key, string> = {
  sign_in_title: 'Connexion administrateur',
  email: 'E-mail',
  password: 'Mot de passe',
  sign_in_button: 'Continuer',
  sign_in_failed: "L'e-mail ou le mot de passe est incorrect.",
  two_factor_title: 'Authentification à deux facteurs',
  two_factor_help: "Saisissez le code à 6 chiffres de votre application d'authentification.",
  code_label: "Code d'authentification",
  verify_button: 'Vérifier',
  two_factor_failed: "Ce code n'est pas valide. Attendez un nouveau code et réessayez.",
  throttled: 'Trop de tentatives. Réessayez dans {minutes} minutes.',
  csrf_failed: 'Ce formulaire a expiré. Revenez en arrière, rechargez la page et réessayez.',
  session_expired: 'Votre connexion a expiré. Connectez-vous à nouveau.',
  signed_out:
    "Vous êtes déconnecté. L'accès accordé aux applications pendant cette session a pris fin.",
  consent_title: "Autoriser l'accès",
  consent_intro: "{client} demande à utiliser l'API School Platform en votre nom.",
  consent_admin: 'Administrateur',
  consent_account: 'Compte',
  consent_grants: 'Si vous approuvez, il pourra :',
  grant_api:
    "appeler l'API v3 en votre nom, avec un identifiant d'API auquel vous êtes lié (les deux sont toujours exigés) ;",
  grant_duration: "garder l'accès 1 heure à la fois, renouvelé automatiquement jusqu'à 30 jours ;",
  grant_end:
    "jusqu'à ce que vous vous déconnectiez ici, qu'il se déconnecte ou que vous soyez détaché de l'identifiant.",
  consent_redirect: 'Vous reviendrez ensuite à {uri}, une application de cet ordinateur.',
  approve: 'Approuver',
  deny: 'Refuser',
  signed_in_title: 'Connecté',
  signed_in_as: 'Connecté en tant que {email}.',
  sign_out_button: 'Se déconnecter',
  error_title: "Demande d'autorisation refusée",
  err_plain: 'La méthode PKCE « plain » n’est pas acceptée. Utilisez S256.',
  err_duplicate: 'Le paramètre {name} a été envoyé plusieurs fois.',
  err_client_missing: 'La demande ne précise pas de client (client_id).',
  err_client_unknown: 'Client inconnu.',
  err_redirect_missing: "La demande n'a pas de redirect_uri.",
  err_redirect_invalid:
    "Ce redirect_uri n'est pas autorisé. Seuls http://127.0.0.1:{port}/callback et http://[::1]:{port}/callback sont acceptés.",
};

const TABLES: Record<Locale, Record<Key, string>> = {
  'en-US': EN,
  'pt-BR': PT,
  'es-ES': ES,
  'fr-FR': FR,
};

export type PageKey = Key;

export function pageText(
  locale: Locale,
  key: Key,
  params: Record<string, string | number> = {},
): string {
  return TABLES[locale][key].replace(/\{(\w+)\}/g, (m, name) =>
    name in params ? String(params[name]) : m,
  );
}
