// The typed v3 client lives in packages/client (published as @school-platform/client); the CLI,
// the benchmarks and the tests import it from here, from its source.
export * from '../../packages/client/src/index.ts';
