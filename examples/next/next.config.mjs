import { fileURLToPath } from "node:url";

/** @type {import("next").NextConfig} */
export default {
  turbopack: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    // Inside this repository Portcullis is read from src/; an app that installs it needs no alias.
    resolveAlias: {
      "portcullis/adapters/next": "../../src/adapters/next/index.ts",
      portcullis: "../../src/index.ts",
    },
  },
  poweredByHeader: false,
};
