import { describe, expect, it } from "vitest";
import { MissingPeerError } from "./errors.ts";
import { missingPeer } from "./peer.ts";

const failure = (message: string, code?: string) => Object.assign(new Error(message), { code });

describe("missingPeer", () => {
  it.each([
    [
      "Node's import",
      failure(
        "Cannot find package '@modelcontextprotocol/server' imported from /app/node_modules/portcullis/dist/mcp/sdk.js",
        "ERR_MODULE_NOT_FOUND",
      ),
    ],
    [
      "Node's require",
      failure(
        "Cannot find module '@modelcontextprotocol/server'\nRequire stack:\n- /app/x.js",
        "MODULE_NOT_FOUND",
      ),
    ],
    ["Bun's", failure('Cannot find package "@modelcontextprotocol/server" from "/app/x.js"')],
  ])("turns %s not-found error for the package into one line naming it", (_runtime, error) => {
    const turned = missingPeer(error, "portcullis/mcp", "@modelcontextprotocol/server");
    expect(turned).toBeInstanceOf(MissingPeerError);
    expect((turned as MissingPeerError).message).toBe(
      "portcullis/mcp needs @modelcontextprotocol/server, which is not installed: npm install @modelcontextprotocol/server",
    );
    expect((turned as MissingPeerError).code).toBe("ERR_MISSING_PEER");
    expect((turned as MissingPeerError).packageName).toBe("@modelcontextprotocol/server");
    expect((turned as MissingPeerError).cause).toBe(error);
  });

  it.each([
    [
      "a module the package itself lacks",
      failure(
        "Cannot find package 'zod' imported from /app/node_modules/@modelcontextprotocol/server/dist/index.mjs",
        "ERR_MODULE_NOT_FOUND",
      ),
    ],
    [
      "a broken install of the package",
      failure(
        "Cannot find module '/app/node_modules/redis/dist/index.js'. Please verify that the package.json has a valid \"main\" entry",
        "MODULE_NOT_FOUND",
      ),
    ],
    ["a package that throws while it loads", new SyntaxError("Unexpected token 'export'")],
    ["something that is not an error", "redis"],
  ])("hands back %s as it was", (_case, error) => {
    expect(missingPeer(error, "portcullis/stores/redis", "redis")).toBe(error);
  });
});
