import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from "node:http";
import { lingerOnClose } from "./engine/lingering-close.ts";

/**
 * `node:http`'s `createServer`, whose connections, when closed while a request
 * body is still arriving, close the lingering way: the answer and a FIN go
 * out, up to 8 MiB more of the body is read and discarded for up to 10 s, and
 * the socket closes once the body is in, the client closes, or a limit passes.
 * A plain close would reset the connection while body bytes arrive, and the
 * reset discards the answer from a client that had not read it yet.
 *
 * The Node adapters close this way after the chain's own early answers on any
 * server. This is for hosts that write the answer themselves:
 * `@hono/node-server` closes half a second after an answer that left the body
 * unread, so a client that reads late (busy, or sending its whole body first)
 * loses the chain's 401 or 403; give it this server.
 *
 * @example
 * ```ts
 * import { serve } from "@hono/node-server";
 * import { createLingeringServer } from "portcullis/adapters/node";
 *
 * serve({ fetch: handler, port: 3000, createServer: createLingeringServer });
 * ```
 */
export const createLingeringServer = ((
  options?: Parameters<typeof createServer>[0],
  listener?: RequestListener,
) => {
  const server = typeof options === "function" ? createServer() : createServer(options ?? {});
  server.on("request", armLinger);
  const handle = typeof options === "function" ? options : listener;
  if (handle !== undefined) server.on("request", handle);
  return server;
}) as typeof createServer;

function armLinger(req: IncomingMessage, res: ServerResponse): void {
  lingerOnClose(req, res);
}
