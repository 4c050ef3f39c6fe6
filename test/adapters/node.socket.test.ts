import { startNode } from "./apps/node.ts";
import { adapterSuite } from "./suite.ts";

adapterSuite({ name: "node:http", start: startNode, routesOnRawPath: true });
