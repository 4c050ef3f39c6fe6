import type { CapabilityTokens, MintInput } from "./token.ts";

// Tokens made in the first partial second whose ids are remembered; more are refused when used.
const MAX_EARLY_TOKENS = 10_000;

/**
 * A memory replay store starts empty, while imported keys and durable grants
 * outlive the process: a token issued before the store existed may have been
 * used, so it is refused. `iat` is in whole seconds, so the tokens this process
 * mints within its first partial second are told apart by their ids.
 */
export function restartGuard(tokens: CapabilityTokens, startedAt: number) {
  const early = new Set<string>();
  return {
    tokens: Object.freeze({
      ...tokens,
      mint: async (input: MintInput) => {
        const token = await tokens.mint(input);
        const issuedAt = (token.expiresAt - token.expiresIn) * 1000;
        if (issuedAt < startedAt && early.size < MAX_EARLY_TOKENS) early.add(token.jti);
        return token;
      },
    }),
    predates: (issuedAtSeconds: number, jti: string) =>
      !(issuedAtSeconds * 1000 >= startedAt) && !early.has(jti),
  };
}
