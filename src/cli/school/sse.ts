// A Server-Sent Events parser (the WHATWG "event stream interpretation", minus the browser parts):
// fed text as it arrives, it hands out each complete event and each comment line.
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export interface SseHandlers {
  event: (e: SseEvent) => void;
  comment?: (text: string) => void;
  /** The server's reconnection delay (`retry:`), in milliseconds. */
  retry?: (ms: number) => void;
}

export class SseParser {
  private buffer = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];
  private readonly on: SseHandlers;

  constructor(on: SseHandlers) {
    this.on = on;
  }

  feed(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      const width = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      // A lone \r at the very end may be the first half of \r\n: wait for more.
      if (width === 1 && this.buffer[nl] === '\r' && nl === this.buffer.length - 1) return;
      this.buffer = this.buffer.slice(nl + width);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return this.on.comment?.(line.slice(1).trimStart());
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.on.retry?.(Number(value));
  }

  private dispatch(): void {
    if (this.data.length === 0) {
      this.event = '';
      return;
    }
    const e = { id: this.id, event: this.event || 'message', data: this.data.join('\n') };
    this.event = '';
    this.data = [];
    this.on.event(e);
  }
}
