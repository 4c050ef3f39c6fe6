import { startHonoFetch, startHonoMiddleware } from "./apps/hono.ts";
import { adapterSuite } from "./suite.ts";

adapterSuite({
  name: "Hono (honoMiddleware)",
  start: startHonoMiddleware,
  routesOnRawPath: false,
  routeRunsInsideChain: true,
});
adapterSuite({
  name: "Hono (chain.wrap(app.fetch) on toNodeListener)",
  start: startHonoFetch,
  routesOnRawPath: false,
  routeRunsInsideChain: true,
});
