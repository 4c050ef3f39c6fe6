import { startFastify } from "./apps/fastify.ts";
import { adapterSuite } from "./suite.ts";

adapterSuite({ name: "Fastify", start: startFastify, routesOnRawPath: true });
