import { afterEach, describe, expect, it } from "vitest";
import { serveListener, type TestServer } from "../../../test/support/listen.ts";
import { routes } from "../../authz/routes.ts";
import { anyRequest } from "../../authz/rules.ts";
import { newChain } from "../../chain/new-chain.ts";
import { nodeListener, toNodeListener } from "./index.ts";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const throwingLogger = () => {
  throw new Error("the logger is down");
};

// A rejection nobody handles ends a Node process by default; collect them instead.
function collectUnhandled(): { readonly seen: unknown[]; stop(): void } {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on("unhandledRejection", listener);
  return { seen, stop: () => process.off("unhandledRejection", listener) };
}

describe("an onError listener that throws", () => {
  it("still gets the client a bare 500 from nodeListener, with no unhandled rejection", async () => {
    const unhandled = collectUnhandled();
    const chain = newChain({ authorization: routes([anyRequest().permitAll()]) });
    server = await serveListener(
      nodeListener(
        chain,
        () => {
          throw new Error("route failed");
        },
        { onError: throwingLogger },
      ),
    );
    const response = await fetch(`${server.url}/x`);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("route failed");
    await new Promise((resolve) => setTimeout(resolve, 20));
    unhandled.stop();
    expect(unhandled.seen).toEqual([]);
  });

  it("still gets the client a bare 500 from toNodeListener, with no unhandled rejection", async () => {
    const unhandled = collectUnhandled();
    server = await serveListener(
      toNodeListener(
        () => {
          throw new Error("handler failed");
        },
        { onError: throwingLogger },
      ),
    );
    const response = await fetch(`${server.url}/x`);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("handler failed");
    await new Promise((resolve) => setTimeout(resolve, 20));
    unhandled.stop();
    expect(unhandled.seen).toEqual([]);
  });
});
