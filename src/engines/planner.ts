// Chooses how to turn one format into another over the edges of the working engines: the
// cheapest chain of at most MAX_STEPS conversions (Dijkstra over declared costs). A direct edge
// usually wins; a chain is used only where no single engine does the pair. When the client gave
// options, the route that supports most of them wins, and the cheapest among those (so asking
// for `quality` may move a conversion to the engine that has it). An edge from a format to itself
// (a PNG resized, a PDF cut to pages) is a route of its own, never a link of a longer one.
import { describeOption, type OptionDescriptor, type OptionSpec, type OptionValue, type StepOptions } from './options.ts';
import type { ConversionEdge, Engine } from './types.ts';

const MAX_STEPS = 3;

export interface RouteStep {
  readonly engine: Engine;
  readonly from: string;
  readonly to: string;
  readonly cost: number;
  /** The options its edge declares. */
  readonly options: readonly OptionSpec[];
  readonly firstPageOnly: boolean;
  readonly resets: readonly string[];
  /** The edge's own check of the options it applies together (ConversionEdge.checkOptions). */
  readonly checkOptions?: (options: StepOptions) => void;
  readonly faithful: boolean;
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
  private readonly allRoutes = new Map<string, readonly Route[]>();
  /** Formats with an outgoing edge that refuses to follow some engines (notAfter). */
  private readonly picky = new Set<string>();

  constructor(engines: ReadonlyArray<{ engine: Engine; edges: readonly ConversionEdge[] }>) {
    for (const { engine, edges } of engines) {
      for (const edge of edges) {
        const list = this.outgoing.get(edge.from) ?? [];
        list.push({ engine, edge });
        this.outgoing.set(edge.from, list);
      }
    }
    for (const list of this.outgoing.values()) list.sort((a, b) => a.edge.cost - b.edge.cost);
    for (const [format, list] of this.outgoing) if (list.some(({ edge }) => edge.notAfter || edge.chainsAfter)) this.picky.add(format);
  }

  /** Formats that have at least one outgoing edge. */
  sources(): string[] {
    return [...this.outgoing.keys()];
  }

  /**
   * The cheapest route, or undefined when none exists within MAX_STEPS. With option names: the
   * cheapest of the routes that support the most of them.
   */
  route(from: string, to: string, wanted: readonly string[] = []): Route | undefined {
    const names = [...new Set(wanted)].sort();
    const key = `${from}>${to}>${names.join(',')}`;
    if (!this.cache.has(key)) {
      let found: Route | null;
      if (names.length === 0 && from !== to) {
        found = this.search(from, to);
      } else {
        // Every route, cheapest first (stable: equal costs keep the search's order); the first
        // with the best coverage wins.
        let best: Route | null = null;
        let bestCovered = -1;
        const usual = this.usualLength(from, to);
        for (const route of this.routesBetween(from, to)) {
          // A longer route counts once an input option justifies it, and then for all it applies.
          const justified = justifiedOptions(route, usual);
          const applied = names.some((name) => justified.some((spec) => spec.name === name)) ? routeOptions(route) : [];
          const covered = names.filter((name) => applied.some((spec) => spec.name === name)).length;
          if (covered > bestCovered) {
            best = route;
            bestCovered = covered;
          }
        }
        found = best;
      }
      this.cache.set(key, found);
    }
    return this.cache.get(key) ?? undefined;
  }

  /**
   * The options a client may give for a pair: those of every route between the two formats, each
   * described as the cheapest route that has it declares it (the route the planner then takes).
   */
  optionsBetween(from: string, to: string): OptionDescriptor[] {
    const found = new Map<string, OptionDescriptor>();
    const usual = this.usualLength(from, to);
    for (const route of this.routesBetween(from, to)) {
      for (const spec of justifiedOptions(route, usual)) if (!found.has(spec.name)) found.set(spec.name, describeOption(spec));
    }
    return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** How many steps the pair takes without options (a format to itself: one). */
  private usualLength(from: string, to: string): number {
    return from === to ? 1 : (this.search(from, to)?.length ?? 0);
  }

  /**
   * The routes options may choose from, cheapest first: those at most one step longer than the
   * cheapest route. A step only counts for an option it really applies (applyingStep: output
   * options at the last step, input options not after a step that `resets` them), and the longer
   * routes only for what they select from the input (justifiedOptions).
   */
  private routesBetween(from: string, to: string): readonly Route[] {
    const key = `${from}>${to}`;
    let routes = this.allRoutes.get(key);
    if (!routes) {
      const longest = this.usualLength(from, to) + 1;
      const found: Array<{ route: Route; cost: number }> = [];
      if (from === to) {
        for (const { engine, edge } of this.outgoing.get(from) ?? []) {
          if (edge.to === from) found.push({ route: [stepOf(engine, edge)], cost: edge.cost });
        }
      } else {
        const walk = (format: string, steps: RouteStep[], seen: Set<string>, cost: number) => {
          for (const { engine, edge } of this.outgoing.get(format) ?? []) {
            if (edge.to === edge.from || seen.has(edge.to)) continue;
            if (edge.notAfter?.includes(steps.at(-1)?.engine.id ?? '')) continue;
            if (edge.chainable === false && (edge.to !== to || !startsOrFollows(edge, steps.at(-1)?.engine.id))) continue;
            const next = [...steps, stepOf(engine, edge)];
            if (edge.to === to) {
              found.push({ route: next, cost: cost + edge.cost });
              continue;
            }
            if (next.length < MAX_STEPS && !edge.endsRoute && edge.chainable !== false) walk(edge.to, next, new Set([...seen, edge.to]), cost + edge.cost);
          }
        };
        walk(from, [], new Set([from]), 0);
      }
      routes = found.filter((r) => r.route.length <= longest).sort((a, b) => a.cost - b.cost).map((r) => r.route);
      this.allRoutes.set(key, routes);
    }
    return routes;
  }

  /** Every format reachable from `from`, in any number of steps up to MAX_STEPS. */
  targets(from: string): string[] {
    const found = new Set<string>();
    // Each format is followed once, from the engine that first reached it (an edge may refuse to
    // follow some engines: notAfter). A format first reached as a rendition (endsRoute) is not
    // followed further even where another engine also makes it: a drawing's first page as PNG
    // does not go on to become an icon.
    let frontier: Array<{ format: string; engine: string | undefined }> = [{ format: from, engine: undefined }];
    for (let step = 0; step < MAX_STEPS; step++) {
      const next: typeof frontier = [];
      for (const { format, engine: previous } of frontier) {
        for (const { engine, edge } of this.outgoing.get(format) ?? []) {
          if (edge.chainable === false && !startsOrFollows(edge, previous)) continue;
          if (previous !== undefined && edge.notAfter?.includes(previous)) continue;
          if (edge.to === edge.from) {
            // A route of its own: the format to itself, in one step, from the upload.
            if (step === 0) found.add(edge.to);
            continue;
          }
          if (edge.to !== from && !found.has(edge.to)) {
            found.add(edge.to);
            // A route may end with an edge that does not chain, but never continue from it.
            if (edge.chainable !== false && !edge.endsRoute) next.push({ format: edge.to, engine: engine.id });
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
        if (edge.to === edge.from) continue;
        if (edge.notAfter?.includes(current.steps.at(-1)?.engine.id ?? '')) continue;
        // An edge that does not chain is a route of its own (the upload's format to the target),
        // or the last step after an engine it names (chainsAfter).
        if (edge.chainable === false && (edge.to !== to || !startsOrFollows(edge, current.steps.at(-1)?.engine.id))) continue;
        const cost = current.cost + edge.cost;
        const ended = edge.endsRoute === true;
        // Where an edge out of the format refuses some engines, which engine made it matters too.
        const key = `${edge.to}#${current.steps.length + 1}#${ended}${this.picky.has(edge.to) ? `#${engine.id}` : ''}`;
        if (cost >= (best.get(key) ?? Infinity)) continue;
        best.set(key, cost);
        queue.push({ format: edge.to, cost, steps: [...current.steps, stepOf(engine, edge)], ended });
      }
    }
    return null;
  }
}

/** Whether an unchainable edge may come after `previous` (undefined: it is the route's first step). */
function startsOrFollows(edge: ConversionEdge, previous: string | undefined): boolean {
  return previous === undefined || (edge.chainsAfter?.includes(previous) ?? false);
}

function stepOf(engine: Engine, edge: ConversionEdge): RouteStep {
  return { engine, from: edge.from, to: edge.to, cost: edge.cost, options: edge.options ?? [], firstPageOnly: edge.firstPageOnly === true, resets: edge.resets ?? [], faithful: edge.faithful === true, ...(edge.checkOptions ? { checkOptions: edge.checkOptions } : {}) };
}

/**
 * The options a route may be chosen for. A route of the usual length: all it applies. A route one
 * step longer: only options that select from the input (a page of a deck rendered through PDF by
 * poppler, a sheet of an xls through xlsx by the data engine), and only through `faithful` steps
 * that keep everything such an option selects from; an option shaping the output (a
 * table of contents, a paper size, a quality) never moves a document to another chain of engines,
 * which would change far more than the option (docx → epub → calibre for a `toc`).
 */
function justifiedOptions(route: Route, usualLength: number): OptionSpec[] {
  const specs = routeOptions(route);
  if (route.length <= usualLength) return specs;
  // Only through steps that keep all a later step selects from: never png → jpg → pdf for a width.
  if (!route.slice(0, -1).every((step) => step.faithful)) return [];
  return specs.filter((spec) => spec.appliesAt === 'input');
}

/** The options a route supports: each name once, as the step that would apply it declares it. */
export function routeOptions(route: Route): OptionSpec[] {
  const byName = new Map<string, OptionSpec>();
  for (const [index, step] of route.entries()) {
    for (const spec of step.options) if (applyingStep(route, spec.name) === index) byName.set(spec.name, spec);
  }
  return [...byName.values()];
}

/**
 * Which step applies an option: the first that declares it for options that select from the input;
 * for options that shape the output, the route's last step, or none. An output option taken by a
 * middle step would shape a file nobody downloads, and worse: a `delimiter` on json → csv → tsv
 * would make the tsv step misread its input.
 */
function applyingStep(route: Route, name: string): number | undefined {
  const declaring = route.flatMap((step, index) => {
    const spec = step.options.find((o) => o.name === name);
    return spec ? [{ index, spec }] : [];
  });
  if (declaring.length === 0) return undefined;
  if (declaring[0]!.spec.appliesAt === 'input') {
    const index = declaring[0]!.index;
    // Chosen from what an earlier step made anew (a sheet of a workbook built from a CSV): not the upload's.
    return route.slice(0, index).some((step) => step.resets.includes(name)) ? undefined : index;
  }
  const last = declaring.at(-1)!;
  return last.index === route.length - 1 ? last.index : undefined;
}

/**
 * Hands each parsed option to the one step that applies it. A step rendering only a first page
 * (firstPageOnly) with no page_range of its own asks the earlier step that takes page_range for
 * page 1 alone: only the pages needed are converted.
 */
export function assignOptions(route: Route, values: Readonly<Record<string, OptionValue>>): StepOptions[] {
  const perStep: Array<Record<string, OptionValue>> = route.map(() => ({}));
  for (const [name, value] of Object.entries(values)) {
    const index = applyingStep(route, name);
    if (index === undefined) continue;
    perStep[index]![name] = value;
    // An option every step applies (strip=false: metadata dropped by a middle step is gone for good).
    for (const [earlier, step] of route.slice(0, index).entries()) {
      if (step.options.some((o) => o.name === name && o.appliesAt === 'every')) perStep[earlier]![name] = value;
    }
  }
  for (const [index, step] of route.entries()) {
    if (!step.firstPageOnly || perStep[index]!['page_range'] !== undefined) continue;
    if (route.slice(0, index).some((_, earlier) => perStep[earlier]!['page_range'] !== undefined)) continue;
    const earlier = route.slice(0, index).findIndex((s) => s.options.some((o) => o.name === 'page_range'));
    if (earlier >= 0) perStep[earlier]!['page_range'] = { kind: 'pages', spans: [{ from: 1, to: 1 }] };
  }
  return perStep;
}
