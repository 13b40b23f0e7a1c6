import { filesSuite } from '../helpers/files-suite.ts';

// The same tests against S3 (an s3rver emulator the helper starts on 127.0.0.1).
filesSuite('s3').run();
