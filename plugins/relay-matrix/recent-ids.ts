/** A bounded set of event ids: the oldest goes once there are `max` (the relay's memory of what it posted or handed on). */
export class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly max: number) {}
  add(id: string): void {
    this.ids.add(id);
    if (this.ids.size > this.max) this.ids.delete(this.ids.values().next().value!);
  }
  has(id: string): boolean {
    return this.ids.has(id);
  }
}
