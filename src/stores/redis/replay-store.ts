import type { ReplayStore } from "../../agentauth/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// SET NX: one command, so two instances cannot both record the id. The expiry is relative:
// an absolute one would be read on Redis's clock, and a caller whose clock is behind would
// record ids that expire at once and are accepted again.
const SET_IF_ABSENT = new RedisScript(
  `return redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) and 1 or 0`,
);

/** `ReplayStore` on Redis: `SET NX PX` per token id. */
export class RedisReplayStore extends ScriptedStore implements ReplayStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisReplayStore", options, "portcullis:jti:");
  }

  async setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean> {
    const ttl = Math.max(Math.ceil(expiresAt - now), 1);
    const reply = await this.run(SET_IF_ABSENT, [this.prefix + jti], [ttl]);
    if (reply !== 0 && reply !== 1) throw new TypeError("unexpected reply from the replay script");
    return reply === 1;
  }
}
