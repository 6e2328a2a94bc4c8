/** A bounded set of ids, oldest out first: a relay's memory of what it posted or handed on lately. */
export class RecentIds {
  private readonly ids = new Set<string>();

  constructor(private readonly max: number) {}

  /** Keeps an id; past `max`, the oldest kept is forgotten. */
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
  }

  /** Whether the id is among the last `max` added. */
  has(id: string): boolean {
    return this.ids.has(id);
  }
}
