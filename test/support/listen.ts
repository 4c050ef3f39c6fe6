/**
 * Test support for the Node adapters: real `node:http` servers on a free
 * loopback port. Not part of the package.
 */
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface TestServer {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

export function serveListener(listener: RequestListener): Promise<TestServer> {
  const server = createServer(listener);
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        server,
        close: () => {
          server.closeAllConnections();
          return new Promise<void>((done) => server.close(() => done()));
        },
      });
    });
  });
}
