/**
 * The capability-token benchmarks again, with the Request and Response
 * classes @hono/node-server installs when it serves a Fetch handler (its
 * Response is built lazily and written straight to the socket). Run in its own
 * process: the classes replace the globals for good.
 */
import { getRequestListener } from "@hono/node-server";
import { agentBenchmarks } from "./agents.ts";

getRequestListener(async () => new Response(null));
await agentBenchmarks("@hono/node-server's Request and Response (as behind serve())");
