import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Handler } from "portcullis";

export interface Served {
  readonly url: string;
  close(): Promise<void>;
}

/** Serves a Fetch handler on 127.0.0.1 at a free port. */
export function serveFetch(handler: Handler): Promise<Served> {
  return new Promise((resolve) => {
    const server = serve(
      { fetch: handler, port: 0, hostname: "127.0.0.1" },
      (info: AddressInfo) => {
        resolve({
          url: `http://127.0.0.1:${info.port}`,
          close: () => new Promise<void>((done) => server.close(() => done())),
        });
      },
    );
  });
}
