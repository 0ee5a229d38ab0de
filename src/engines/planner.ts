// Chooses how to turn one format into another over the edges of the working engines: the
// cheapest chain of at most MAX_STEPS conversions (Dijkstra over declared costs). A direct edge
// usually wins; a chain is used only where no single engine does the pair.
import type { ConversionEdge, Engine } from './types.ts';

const MAX_STEPS = 3;

export interface RouteStep {
  readonly engine: Engine;
  readonly from: string;
  readonly to: string;
  readonly cost: number;
}

export type Route = readonly RouteStep[];

interface Candidate {
  readonly engine: Engine;
  readonly edge: ConversionEdge;
}

export class RoutePlanner {
  /** Outgoing edges per source format, cheapest first. */
  private readonly outgoing = new Map<string, Candidate[]>();
  private readonly cache = new Map<string, Route | null>();

  constructor(engines: ReadonlyArray<{ engine: Engine; edges: readonly ConversionEdge[] }>) {
    for (const { engine, edges } of engines) {
      for (const edge of edges) {
        const list = this.outgoing.get(edge.from) ?? [];
        list.push({ engine, edge });
        this.outgoing.set(edge.from, list);
      }
    }
    for (const list of this.outgoing.values()) list.sort((a, b) => a.edge.cost - b.edge.cost);
  }

  /** Formats that have at least one outgoing edge. */
  sources(): string[] {
    return [...this.outgoing.keys()];
  }

  /** The cheapest route, or undefined when none exists within MAX_STEPS. */
  route(from: string, to: string): Route | undefined {
    const key = `${from}>${to}`;
    if (!this.cache.has(key)) this.cache.set(key, this.search(from, to));
    return this.cache.get(key) ?? undefined;
  }

  /** Every format reachable from `from`, in any number of steps up to MAX_STEPS. */
  targets(from: string): string[] {
    const found = new Set<string>();
    let frontier = new Set([from]);
    for (let step = 0; step < MAX_STEPS; step++) {
      const next = new Set<string>();
      for (const format of frontier) {
        for (const { edge } of this.outgoing.get(format) ?? []) {
          if (edge.chainable === false && step > 0) continue;
          if (edge.to !== from && !found.has(edge.to)) {
            found.add(edge.to);
            // A route may end with an edge that does not chain, but never continue from it.
            if (edge.chainable !== false && !edge.endsRoute) next.add(edge.to);
          }
        }
      }
      frontier = next;
    }
    return [...found].sort();
  }

  private search(from: string, to: string): Route | null {
    if (from === to) return null;
    // Dijkstra over (format, steps taken): with a cap on steps, a cheaper but longer way to a
    // format must not hide a dearer, shorter one that still has steps left to reach the target.
    // Small graphs (tens of formats): a sorted list is plenty.
    const best = new Map<string, number>([[`${from}#0`, 0]]);
    const queue: Array<{ format: string; cost: number; steps: RouteStep[]; ended: boolean }> = [{ format: from, cost: 0, steps: [], ended: false }];
    while (queue.length > 0) {
      queue.sort((a, b) => a.cost - b.cost);
      const current = queue.shift()!;
      if (current.format === to) return current.steps;
      if (current.steps.length >= MAX_STEPS || current.ended) continue;
      for (const { engine, edge } of this.outgoing.get(current.format) ?? []) {
        // An edge that does not chain is a route of its own: the upload's format to the target.
        if (edge.chainable === false && (current.steps.length > 0 || edge.to !== to)) continue;
        const cost = current.cost + edge.cost;
        const ended = edge.endsRoute === true;
        const key = `${edge.to}#${current.steps.length + 1}#${ended}`;
        if (cost >= (best.get(key) ?? Infinity)) continue;
        best.set(key, cost);
        queue.push({ format: edge.to, cost, steps: [...current.steps, { engine, from: edge.from, to: edge.to, cost: edge.cost }], ended });
      }
    }
    return null;
  }
}
