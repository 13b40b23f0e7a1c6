// A tiny SMTP server on 127.0.0.1 for the outbox suite: just enough of RFC 5321 for nodemailer
// (EHLO without extensions, MAIL, RCPT, DATA, QUIT). `reply` decides the answer to each RCPT, so a
// test can refuse an address for good (550) or for now (451).
import net from 'node:net';

export interface Received {
  from: string;
  to: string[];
  data: string;
}

export interface SmtpServer {
  port: number;
  messages: Received[];
  /** The reply to `RCPT TO:<address>`; 250 by default. */
  reply: (address: string) => string;
  close(): Promise<void>;
}

export async function smtpServer(): Promise<SmtpServer> {
  const state: SmtpServer = {
    port: 0,
    messages: [],
    reply: () => '250 OK',
    close: async () => undefined,
  };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffer = '';
    let inData = false;
    let current: Received = { from: '', to: [], data: '' };
    const send = (line: string) => socket.write(line + '\r\n');
    send('220 test.local ESMTP');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          state.messages.push(current);
          current = { from: '', to: [], data: '' };
          send('250 OK queued');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') send('250 test.local');
        else if (verb === 'MAIL') {
          current = { from: /<(.*)>/.exec(line)?.[1] ?? '', to: [], data: '' };
          send('250 OK');
        } else if (verb === 'RCPT') {
          const to = /<(.*)>/.exec(line)?.[1] ?? '';
          const answer = state.reply(to);
          if (answer.startsWith('250')) current.to.push(to);
          send(answer);
        } else if (verb === 'DATA') {
          inData = true;
          send('354 End data with <CR><LF>.<CR><LF>');
        } else if (verb === 'RSET' || verb === 'NOOP') send('250 OK');
        else if (verb === 'QUIT') {
          send('221 Bye');
          socket.end();
        } else send('502 Command not implemented');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as net.AddressInfo).port;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}
