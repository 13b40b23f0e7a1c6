// Picks the store from the configuration: STORAGE_URL=s3://bucket?endpoint=...&region=... is
// S3-compatible object storage; unset, files live on local disk under FILES_DIR. The S3 client
// (about 150 ms of module loading) is imported only when it is the store: every process that
// does not use it starts that much sooner (the admin CLI, each worker, each test's child).
import type { Config } from '../../../config.ts';
import { LocalStorage } from './local.ts';
import { UrlSigner } from './signer.ts';
import type { Storage } from './types.ts';

export async function createStorage(config: Config, signingKey: Buffer): Promise<Storage> {
  if (config.storageUrl) {
    const { S3Storage, parseStorageUrl } = await import('./s3.ts');
    return new S3Storage(parseStorageUrl(config.storageUrl));
  }
  return new LocalStorage(config.filesDir, new UrlSigner(signingKey, config.publicBaseUrl));
}
