// Picks the store from the configuration: STORAGE_URL=s3://bucket?endpoint=...&region=... is
// S3-compatible object storage; unset, files live on local disk under FILES_DIR.
import type { Config } from '../../../config.ts';
import { LocalStorage } from './local.ts';
import { S3Storage, parseStorageUrl } from './s3.ts';
import { UrlSigner } from './signer.ts';
import type { Storage } from './types.ts';

export function createStorage(config: Config, signingKey: Buffer): Storage {
  if (config.storageUrl) return new S3Storage(parseStorageUrl(config.storageUrl));
  return new LocalStorage(config.filesDir, new UrlSigner(signingKey, config.publicBaseUrl));
}
