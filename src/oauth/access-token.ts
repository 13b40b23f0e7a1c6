// RFC 9068 access tokens: typ at+jwt, RS256, aud service-api-v3, sub = administrator id,
// client_id service-cli, jti (the row that can be revoked), iat, exp.
import crypto from 'node:crypto';
import {
  SignJWT,
  compactVerify,
  decodeJwt,
  decodeProtectedHeader,
  jwtVerify,
  type JWTPayload,
  type ProtectedHeaderParameters,
} from 'jose';
import type { Clock } from '../clock.ts';
import { ACCESS_TOKEN_SECONDS, AUDIENCE, CLIENT_ID } from './constants.ts';
import type { SigningKeys } from './keys.ts';

export interface AccessClaims {
  sub: string;
  jti: string;
  exp: number;
  iat: number;
}

export async function signAccessToken(
  keys: SigningKeys,
  clock: Clock,
  issuer: string,
  adminId: number,
): Promise<{ token: string; jti: string; expiresAt: Date }> {
  const { kid, privateKey } = await keys.signingKey();
  const iat = Math.floor(clock.now().getTime() / 1000);
  const exp = iat + ACCESS_TOKEN_SECONDS;
  const jti = crypto.randomBytes(16).toString('base64url');
  const token = await new SignJWT({ client_id: CLIENT_ID })
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setSubject(String(adminId))
    .setJti(jti)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(privateKey);
  return { token, jti, expiresAt: new Date(exp * 1000) };
}

/** Header and claims of anything JWT-shaped, without verifying it; null when it is not a JWT. */
export function peek(
  token: string,
): { header: ProtectedHeaderParameters; claims: JWTPayload } | null {
  if (token.split('.').length !== 3) return null;
  try {
    return { header: decodeProtectedHeader(token), claims: decodeJwt(token) };
  } catch {
    return null;
  }
}

/**
 * An OpenID Connect ID token (or something shaped like one) presented where an access token
 * belongs: the typ of an ID token (JWT or none), the client as audience, or claims only ID tokens
 * carry. Signature is not checked: whoever issued it, it is the wrong kind of token.
 */
export function looksLikeIdToken(header: ProtectedHeaderParameters, claims: JWTPayload): boolean {
  const typ = header.typ?.toLowerCase();
  if (typ === undefined || typ === 'jwt' || typ === 'application/jwt') return true;
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (aud.includes(CLIENT_ID)) return true;
  return ['nonce', 'azp', 'at_hash', 'c_hash', 's_hash'].some((c) => claims[c] !== undefined);
}

/** Full validation (signature, typ, iss, aud, exp, client_id); throws on any failure. */
export async function verifyAccessToken(
  keys: SigningKeys,
  clock: Clock,
  issuer: string,
  token: string,
): Promise<AccessClaims> {
  const { payload } = await jwtVerify(
    token,
    async (header) => {
      const key = header.kid ? await keys.verificationKey(header.kid) : undefined;
      if (!key) throw new Error('unknown signing key');
      return key;
    },
    {
      algorithms: ['RS256'],
      typ: 'at+jwt',
      issuer,
      audience: AUDIENCE,
      currentDate: clock.now(),
      requiredClaims: ['sub', 'jti', 'exp', 'iat', 'client_id'],
    },
  );
  if (payload.client_id !== CLIENT_ID) throw new Error('unexpected client_id');
  return payload as unknown as AccessClaims;
}

/** The jti of a token this server signed, expired or not (revocation accepts expired tokens). */
export async function signedJti(keys: SigningKeys, token: string): Promise<string | undefined> {
  try {
    const { kid } = decodeProtectedHeader(token);
    const key = kid ? await keys.verificationKey(kid) : undefined;
    if (!key) return undefined;
    const { payload } = await compactVerify(token, key, { algorithms: ['RS256'] });
    const jti = JSON.parse(new TextDecoder().decode(payload)).jti;
    return typeof jti === 'string' ? jti : undefined;
  } catch {
    return undefined;
  }
}
