// The fixed values of the authorization server (specification: v3 human mode; spec/DECISIONS.md, OAuth).
export const CLIENT_ID = 'service-cli';
export const AUDIENCE = 'service-api-v3';
export const ACCESS_TOKEN_SECONDS = 3600;
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 3600;
export const CODE_SECONDS = 60;
/** Between the password and the TOTP code. */
export const TWO_FACTOR_SECONDS = 10 * 60;
/** A signed-in browser session (it only gates the consent page; tokens outlive it). */
export const SESSION_SECONDS = 12 * 3600;
