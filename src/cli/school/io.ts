/** Where the school CLI writes, and what it reads from its environment (tests inject their own). */
export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
  /** Where progress bars are drawn (default: stderr). */
  bars?: NodeJS.WritableStream;
  /** Stops a long-running command (events listen) as Ctrl-C would (default: SIGINT, SIGTERM). */
  signal?: AbortSignal;
  /** What the user types (default: process.stdin): a pasted login callback address. */
  stdin?: NodeJS.ReadableStream;
}
