import { filesSuite } from '../helpers/files-suite.ts';

filesSuite('local').run();
