import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    conditions: ["source"],
    // The Next.js example imports its chain through "@/", as create-next-app sets an app up.
    alias: [{ find: /^@\/(.*)$/, replacement: `${import.meta.dirname}/examples/next/$1` }],
  },
  ssr: { resolve: { conditions: ["source"], externalConditions: ["source"] } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 20_000,
    // Packages that publish TypeScript under the "source" condition too: transformed, not loaded raw.
    server: {
      deps: {
        inline: ["eventsource", "@modelcontextprotocol/client", "@modelcontextprotocol/sdk"],
      },
    },
  },
});
