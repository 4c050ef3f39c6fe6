/**
 * Fastify 5: the `fastifyPortcullis` plugin runs a chain for every route, child plugins and 404s
 * included; `fastifyHook` mounts a guard on one plugin.
 *
 * Needs the optional peer `fastify` 5: `npm install fastify`.
 *
 * @module portcullis/adapters/fastify
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
} from "fastify";
import fastifyPlugin from "fastify-plugin";
import type { Chain } from "../../chain/index.ts";
import type { Middleware } from "../../core/handler.ts";
import { checkAdapterOptions } from "../../core/options.ts";
import { type AdapterOptions, chainDecider } from "../node/engine/chain-runner.ts";
import { eachField } from "../node/engine/response.ts";

export type { AdapterOptions } from "../node/engine/chain-runner.ts";

/**
 * Options of the `fastifyPortcullis` plugin.
 *
 * @example
 * ```ts
 * import Fastify from "fastify";
 * import { newChain } from "portcullis";
 * import { fastifyPortcullis } from "portcullis/adapters/fastify";
 *
 * const app = Fastify();
 * await app.register(fastifyPortcullis, {
 *   chain: newChain({ authorization: myRules }),
 *   onError: (error) => log.error({ err: error }, "security chain failed"),
 * });
 * ```
 */
export interface FastifyPortcullisOptions extends AdapterOptions {
  /** The security chain (`newChain({...})`) or any Portcullis middleware. Required. */
  readonly chain: Middleware | Chain;
}

const FASTIFY_REGISTER_OPTIONS = ["chain", "prefix", "logLevel", "logSerializers"];

// Describe an empty pass-through body, not the route's.
const BODY_HEADERS = new Set(["content-length", "transfer-encoding"]);

/**
 * A Fastify `onRequest` hook running a Portcullis middleware: the whole chain,
 * or a guard for one route or one encapsulated plugin
 * (`{ onRequest: fastifyHook(requireRole("ADMIN")) }`).
 *
 * When the middleware answers, that answer is sent; later request hooks and
 * the route do not run. When it passes, the legs' headers are set with
 * `reply.header` (each `Set-Cookie` on its own, so the route can add more), the
 * context is bound to `request` and `request.raw` (`mustAuthentication(request)`
 * works), and body bytes the chain read are put back for Fastify's parsers.
 */
export function fastifyHook(
  chain: Middleware | Chain,
  options: AdapterOptions = {},
): onRequestAsyncHookHandler {
  checkAdapterOptions("fastifyHook", options);
  const decide = chainDecider(chain, options);
  return async function portcullis(request: FastifyRequest, reply: FastifyReply) {
    const decided = decide(request.raw, reply.raw, request.raw.url ?? "", [request]);
    const outcome = decided instanceof Promise ? await decided : decided;
    if (outcome.passed) {
      // Fastify's reply.header adds each Set-Cookie to those before it.
      eachField(outcome.headers, (name, value) => {
        if (!BODY_HEADERS.has(name)) reply.header(name, value);
      });
      return;
    }
    const response = outcome.response;
    reply.code(response.status);
    for (const [name, value] of response.headers) {
      if (name !== "set-cookie") reply.header(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) reply.header("set-cookie", cookie);
    if (response.body !== null && request.method === "HEAD") await response.body.cancel();
    await reply.send(request.method === "HEAD" ? null : response.body);
    return reply;
  };
}

/**
 * The whole chain as a Fastify 5 plugin:
 * `await app.register(fastifyPortcullis, { chain })`. Wrapped with
 * `fastify-plugin`, so its `onRequest` hook belongs to the instance it is
 * registered on and covers every route of every child plugin, and Fastify's
 * own 404 answers: without that, encapsulation would leave child plugins
 * unguarded. Register it before any route or plugin.
 */
export const fastifyPortcullis = fastifyPlugin<FastifyPortcullisOptions>(
  async function portcullis(fastify: FastifyInstance, options: FastifyPortcullisOptions) {
    if (options === undefined || options.chain === undefined)
      throw new TypeError("fastifyPortcullis needs { chain }");
    // Fastify hands its own register options to the plugin too.
    checkAdapterOptions("fastifyPortcullis", options, FASTIFY_REGISTER_OPTIONS);
    const { onError } = options;
    fastify.addHook("onRequest", fastifyHook(options.chain, onError ? { onError } : {}));
  },
  { fastify: "5.x", name: "portcullis" },
);
