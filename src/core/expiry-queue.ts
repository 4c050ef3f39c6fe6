/**
 * Keys ordered by when they fall due (epoch ms): a binary min-heap, so the
 * memory stores find what has expired in O(log n) per entry, with no timer and
 * no scan of everything they hold.
 */
export class ExpiryQueue<K> {
  #at: number[] = [];
  #keys: K[] = [];

  get size(): number {
    return this.#at.length;
  }

  push(key: K, at: number): void {
    this.#at.push(at);
    this.#keys.push(key);
    this.#up(this.#at.length - 1);
  }

  /** Takes out every key due at or before `now`, soonest first, handing each to `due`. */
  popDue(now: number, due: (key: K, at: number) => void): void {
    while (this.#at.length > 0 && (this.#at[0] as number) <= now) {
      const at = this.#at[0] as number;
      const key = this.#keys[0] as K;
      const lastAt = this.#at.pop() as number;
      const lastKey = this.#keys.pop() as K;
      if (this.#at.length > 0) {
        this.#at[0] = lastAt;
        this.#keys[0] = lastKey;
        this.#down(0);
      }
      due(key, at);
    }
  }

  /** Keeps only the entries `keep` accepts (to shed entries whose key is gone). O(n). */
  retain(keep: (key: K, at: number) => boolean): void {
    const at: number[] = [];
    const keys: K[] = [];
    for (let i = 0; i < this.#at.length; i++) {
      if (keep(this.#keys[i] as K, this.#at[i] as number)) {
        at.push(this.#at[i] as number);
        keys.push(this.#keys[i] as K);
      }
    }
    this.#at = at;
    this.#keys = keys;
    for (let i = (at.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  #up(index: number): void {
    let i = index;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#at[parent] as number) <= (this.#at[i] as number)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(index: number): void {
    const n = this.#at.length;
    let i = index;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < n && (this.#at[left] as number) < (this.#at[least] as number)) least = left;
      if (right < n && (this.#at[right] as number) < (this.#at[least] as number)) least = right;
      if (least === i) return;
      this.#swap(i, least);
      i = least;
    }
  }

  #swap(a: number, b: number): void {
    const at = this.#at[a] as number;
    this.#at[a] = this.#at[b] as number;
    this.#at[b] = at;
    const key = this.#keys[a] as K;
    this.#keys[a] = this.#keys[b] as K;
    this.#keys[b] = key;
  }
}
