interface Node<K, V> {
  readonly key: K;
  value: V;
  prev: Node<K, V> | undefined;
  next: Node<K, V> | undefined;
  removed: boolean;
}

/**
 * A map in insertion order, as `Map`, whose oldest entries stay O(1) to reach
 * however many were deleted before them. A `Map` used as a queue (delete the
 * first key, add at the end) leaves the deleted slots at its front until it
 * rehashes, and every walk from the start steps over them: O(n) a call at
 * 100 000 entries. Here the entries are a linked list beside the index.
 *
 * Iterating while deleting is safe, as with `Map`: a deleted entry is skipped
 * and the walk goes on from where it was. Unlike `Map`, an entry added after
 * the walk passed the last one may be missed.
 */
export class OrderedMap<K, V> {
  readonly #index = new Map<K, Node<K, V>>();
  #first: Node<K, V> | undefined;
  #last: Node<K, V> | undefined;

  get size(): number {
    return this.#index.size;
  }

  get(key: K): V | undefined {
    return this.#index.get(key)?.value;
  }

  has(key: K): boolean {
    return this.#index.has(key);
  }

  /** Adds at the end, or replaces the value in place (as `Map.set`, the position stays). */
  set(key: K, value: V): this {
    const known = this.#index.get(key);
    if (known !== undefined) {
      known.value = value;
      return this;
    }
    const node: Node<K, V> = { key, value, prev: this.#last, next: undefined, removed: false };
    if (this.#last === undefined) this.#first = node;
    else this.#last.next = node;
    this.#last = node;
    this.#index.set(key, node);
    return this;
  }

  delete(key: K): boolean {
    const node = this.#index.get(key);
    if (node === undefined) return false;
    this.#index.delete(key);
    if (node.prev === undefined) this.#first = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#last = node.prev;
    else node.next.prev = node.prev;
    // `next` is kept, so a walk standing on this entry goes on to the one after it.
    node.removed = true;
    node.prev = undefined;
    return true;
  }

  /** The oldest key, or `undefined` when empty. */
  firstKey(): K | undefined {
    return this.#first?.key;
  }

  *entries(): Generator<[K, V]> {
    let node = this.#first;
    while (node !== undefined) {
      if (!node.removed) yield [node.key, node.value];
      node = node.next;
    }
  }

  *keys(): Generator<K> {
    for (const [key] of this.entries()) yield key;
  }

  [Symbol.iterator](): Generator<[K, V]> {
    return this.entries();
  }
}
