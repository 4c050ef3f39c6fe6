import { startKoa } from "./apps/koa.ts";
import { adapterSuite } from "./suite.ts";

adapterSuite({ name: "Koa", start: startKoa, routesOnRawPath: true });
