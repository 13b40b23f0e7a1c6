// engine: any
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERROR_STATUS, type ErrorCode } from '../../src/errors.ts';
import { LOCALES, detailMessage, errorMessage, negotiateLocale } from '../../src/i18n/messages.ts';

const CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

test('LOCALES lists the four locales, default first', () => {
  assert.equal([...LOCALES], ['en-US', 'pt-BR', 'es-ES', 'fr-FR']);
});

test('negotiateLocale: exact tags and region fallbacks', () => {
  assert.is(negotiateLocale('pt-BR'), 'pt-BR');
  assert.is(negotiateLocale('pt'), 'pt-BR');
  assert.is(negotiateLocale('pt-PT'), 'pt-BR');
  assert.is(negotiateLocale('es-MX'), 'es-ES');
  assert.is(negotiateLocale('es'), 'es-ES');
  assert.is(negotiateLocale('fr-CA'), 'fr-FR');
  assert.is(negotiateLocale('fr-FR'), 'fr-FR');
  assert.is(negotiateLocale('en-GB'), 'en-US');
  assert.is(negotiateLocale('FR-ca'), 'fr-FR');
});

test('negotiateLocale: q-values order the preferences', () => {
  assert.is(negotiateLocale('fr;q=0.5, pt-BR;q=0.9'), 'pt-BR');
  assert.is(negotiateLocale('de-DE, de;q=0.9, es;q=0.8, en;q=0.7'), 'es-ES');
  assert.is(negotiateLocale('en;q=0.1, fr;q=0.2'), 'fr-FR');
  assert.is(negotiateLocale('es, fr'), 'es-ES'); // tie: first listed wins
  assert.is(negotiateLocale('pt-BR;q=0.8, pt;q=0.1, en;q=0.5'), 'pt-BR'); // most specific range
});

test('negotiateLocale: q=0 excludes', () => {
  assert.is(negotiateLocale('pt;q=0, fr;q=0.1'), 'fr-FR');
  assert.is(negotiateLocale('pt-BR;q=0, es;q=0.3'), 'es-ES');
  assert.is(negotiateLocale('fr;q=0, *'), 'en-US');
  assert.is(negotiateLocale('en;q=0, *;q=0.5'), 'pt-BR'); // en excluded, '*' then picks next locale
  assert.is(negotiateLocale('pt-PT;q=0, pt;q=0.6, en;q=0.5'), 'pt-BR');
});

test('negotiateLocale: wildcard, unsupported, missing and garbage -> en-US', () => {
  assert.is(negotiateLocale('*'), 'en-US');
  assert.is(negotiateLocale('de'), 'en-US');
  assert.is(negotiateLocale('de, ja;q=0.5'), 'en-US');
  assert.is(negotiateLocale(undefined), 'en-US');
  assert.is(negotiateLocale(''), 'en-US');
  assert.is(negotiateLocale(';;;,,,=q'), 'en-US');
  assert.is(negotiateLocale('pt;q=abc'), 'en-US');
  assert.is(negotiateLocale('pt;q=2'), 'en-US');
  assert.is(negotiateLocale('\u0000\uffff'), 'en-US');
  assert.is(negotiateLocale('fr;q=0'), 'en-US');
  assert.is(negotiateLocale(42 as unknown as string), 'en-US');
  assert.is(negotiateLocale('x'.repeat(100_000) + ', pt'), 'en-US');
});

test('every code has a non-empty, placeholder-free message in every locale', () => {
  for (const locale of LOCALES) {
    for (const code of CODES) {
      const message = errorMessage(code, locale);
      assert.ok(message.trim().length > 0, `${locale} ${code} is empty`);
      assert.not.match(message, /\{\w+\}/, `${locale} ${code} has a placeholder`);
    }
  }
});

test('localized messages differ from English', () => {
  for (const code of CODES) {
    const en = errorMessage(code, 'en-US');
    for (const locale of ['pt-BR', 'es-ES', 'fr-FR'] as const) {
      assert.is.not(errorMessage(code, locale), en, `${locale} ${code} equals English`);
    }
  }
  assert.is(errorMessage('not_found', 'pt-BR'), 'O recurso solicitado não foi encontrado.');
  assert.is(errorMessage('credential_revoked', 'pt-BR'), 'Esta credencial foi revogada.');
  assert.is(errorMessage('internal_error', 'es-ES'), 'Se ha producido un error interno.');
  assert.is(errorMessage('internal_error', 'fr-FR'), 'Une erreur interne est survenue.');
  assert.is(errorMessage('permission_denied', 'en-US').includes('{'), false);
});

test('unknown error code -> internal_error message', () => {
  assert.is(errorMessage('nope', 'pt-BR'), errorMessage('internal_error', 'pt-BR'));
  assert.is(errorMessage('constructor', 'en-US'), errorMessage('internal_error', 'en-US'));
  assert.is(errorMessage('__proto__', 'fr-FR'), errorMessage('internal_error', 'fr-FR'));
});

test('detail messages interpolate placeholders', () => {
  assert.is(
    detailMessage('too_long', 'en-US', { limit: 120 }),
    'Must be at most 120 characters long.',
  );
  assert.is(detailMessage('too_short', 'pt-BR', { limit: 3 }), 'Deve ter pelo menos 3 caracteres.');
  assert.is(
    detailMessage('invalid_value', 'es-ES', { values: 'active, archived' }),
    'Debe ser uno de estos valores: active, archived.',
  );
  assert.is(
    detailMessage('invalid_format', 'fr-FR', { format: 'date' }),
    'Doit respecter le format date.',
  );
  assert.is(
    detailMessage('invalid_type', 'en-US', { type: 'integer' }),
    'Must be of type integer.',
  );
  assert.is(detailMessage('required', 'pt-BR'), 'Este campo é obrigatório.');
  assert.is(
    detailMessage('invalid_document', 'pt-BR'),
    'CPF inválido: os dígitos verificadores não conferem.',
  );
  // Missing params leave the placeholder untouched rather than printing "undefined".
  assert.is(detailMessage('too_large', 'en-US'), 'Must be less than or equal to {limit}.');
});

test('unknown detail code -> generic invalid message', () => {
  assert.is(detailMessage('whatever', 'en-US'), 'This value is invalid.');
  assert.is(detailMessage('whatever', 'pt-BR'), 'Este valor é inválido.');
  assert.is(detailMessage('toString', 'fr-FR'), 'Cette valeur est invalide.');
});

test('errorMessage interpolates when a message has placeholders and tolerates bad locales', () => {
  assert.is(errorMessage('not_found', 'xx-XX' as never), errorMessage('not_found', 'en-US'));
  assert.is(
    errorMessage('not_found', 'en-US', { id: 'x' }),
    'The requested resource was not found.',
  );
});

test.run();
