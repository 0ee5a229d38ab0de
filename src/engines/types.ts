// The contract every engine fulfils (an engine is what an engine module's create() returns, see
// module.ts). An engine declares, as data, which conversions it does (edges); the registry probes
// it at start and the planner routes jobs over the edges of the engines that passed. Engines never
// see HTTP, job records or storage: a file in, a file out.
import type { Capabilities } from './capabilities.ts';
import type { OptionSpec, StepOptions } from './options.ts';
import type { PoolStats } from '../process/pool/index.ts';

export interface ConversionEdge {
  readonly from: string;
  readonly to: string;
  /**
   * Relative cost used by the route planner to pick the cheapest chain, and to weight each step's
   * share of a multi-step job's progress. 1 is a quick in-process image conversion.
   */
  readonly cost: number;
  /**
   * False for an edge that makes sense only for the file the user uploaded, never as one link of
   * a longer route: a video to an animated GIF is a fine conversion, but chained it would turn a
   * PNG into an MP3 (png → gif → mp4 → mp3). Default true.
   */
  readonly chainable?: boolean;
  /**
   * Engines after whose step an unchainable edge may still come, as a route's last step: an EPS
   * made a PDF by Ghostscript may go on to Inkscape's EMF, where a document made a PDF by
   * LibreOffice may not (every document would list emf). Only with chainable false.
   */
  readonly chainsAfter?: readonly string[];
  /**
   * True for an edge whose output is a final rendition, never the input of a further step: the
   * first page of a document as a PNG is a fine thumbnail, but turning that thumbnail into an
   * icon, a PCX or a HEIC only multiplies pairs nobody needs. Default false.
   */
  readonly endsRoute?: boolean;
  /**
   * The options this conversion takes (options.ts): the contract's names, parsed before the job
   * is accepted and handed to convert() as typed values. Absent: none.
   */
  readonly options?: readonly OptionSpec[];
  /**
   * True for an edge that renders only the first page of its input when given no page_range (a
   * document's first page as a PNG): an earlier step of the route that takes page_range is then
   * asked for the first page only, so a 2,000-page workbook is not converted whole for one image.
   */
  readonly firstPageOnly?: boolean;
  /**
   * Input options whose subject this edge makes anew rather than carries from its input: an edge
   * building a workbook out of a CSV `resets` `sheet`, so a later step's sheet would be chosen in
   * a workbook the route made, never in the upload. The planner does not count such an option for
   * a later step of the route.
   */
  readonly resets?: readonly string[];
  /**
   * Engines this edge never follows in a route: a PDF's pages as a ZIP make sense after a document
   * became a PDF, not after an image was wrapped in one (every image would list `zip` for a ZIP of
   * its one page).
   */
  readonly notAfter?: readonly string[];
  /**
   * Checks the parsed options this edge would apply against each other, where one bounds another
   * (a `crf` within the range of the `video_codec` chosen): throws invalid_option, so the client
   * hears it with 422 before the job exists. Called with this step's options only.
   */
  readonly checkOptions?: (options: StepOptions) => void;
  /**
   * True for an edge whose output carries everything of its input a later step may select from
   * (LibreOffice's PDF of a deck's slides, its xlsx of a workbook's sheets, its SVG of a drawing):
   * only through such steps may an option lengthen a route (planner.ts, justifiedOptions).
   */
  readonly faithful?: boolean;
}

export interface EngineLimits {
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly maxImagePixels: number;
  /** Longest audio or video accepted, in seconds. */
  readonly maxMediaSeconds: number;
}

export interface ConvertRequest {
  /** Absolute path of the input, named by the service (`input.<ext>`), never by the client. */
  readonly input: string;
  /** Absolute path the engine must write. */
  readonly output: string;
  readonly from: string;
  readonly to: string;
  /**
   * The job's private work directory, holding the input and receiving the output: the working
   * directory of the engine's processes and the only place their sandbox lets them write.
   */
  readonly workDir: string;
  /** Reports real progress as a fraction 0..1; engines that cannot tell simply never call it. */
  readonly onProgress: (fraction: number) => void;
  /** Aborted when the job is cancelled or the service shuts down. */
  readonly signal: AbortSignal;
  readonly limits: EngineLimits;
  /**
   * The options this step applies, parsed into their types (options.ts; read them with
   * numberOption, pageRangeOption, ...): only those its edge declares and the client gave, or the
   * planner asked for (a first page). Empty for a job without options.
   */
  readonly options: StepOptions;
}

export interface Engine {
  /** Short stable name, used in logs and metrics. */
  readonly id: string;
  readonly edges: readonly ConversionEdge[];
  /**
   * True when the engine calls onProgress with real figures; otherwise the worker shows an honest
   * time-based estimate from estimateSeconds.
   */
  readonly reportsProgress: boolean;
  /**
   * Wall-clock limit of one conversion by this engine, in seconds, unless CONVERTD_ENGINE_TIMEOUTS
   * says otherwise; the job's own limit (CONVERTD_JOB_TIMEOUT_SECONDS) always applies too. An
   * engine without one (ffmpeg, whose work grows with the media's duration) has the job's limit.
   */
  readonly timeoutSeconds?: number;
  /** Expected duration of one conversion, for the time-based progress estimate. */
  estimateSeconds(inputBytes: number, from: string, to: string): number;
  /**
   * Checks that the tool works on this machine by really converting something small. Rejects when
   * it does not; may resolve with the subset of edges that work when only some do.
   */
  probe(): Promise<readonly ConversionEdge[] | void>;
  /**
   * For engines whose probe starts processes (a warm pool): starts them without probing, when the
   * probe's verdict is remembered from an earlier start (probe-cache.ts).
   */
  warm?(): Promise<void>;
  /**
   * Whether a passed probe may be remembered across starts (probe-cache.ts, CONVERTD_PROBE_CACHE_DIR);
   * absent: never, the probe runs at every start. 'edges': the probe keeps no state, only which of
   * the declared edges passed. An object: the facts the probe found (as JSON: a program's
   * encoders, whether 7-Zip works) and how to restore the engine's state and edges from them.
   */
  readonly probeMemory?: 'edges' | {
    found(): unknown;
    restore(facts: unknown): Promise<readonly ConversionEdge[] | undefined>;
  };
  /**
   * For an engine whose probe makes files that are slow to make and depend only on the installed
   * software (LaTeX's font database): a directory kept across starts (probe-cache.ts), the same
   * while the packages and the service's code are, whatever the settings. Given before the probe
   * or its recall; the engine reads it if it is there and fills it if not.
   */
  useKeptFiles?(dir: string): void;
  convert(request: ConvertRequest): Promise<void>;
  /** Stops pooled processes; called once at shutdown. */
  close?(): Promise<void>;
  /** For engines that keep processes (pools): whether they can take work now, for /readyz. */
  health?(): { readonly ok: boolean; readonly detail: Readonly<Record<string, unknown>> };
  /** For engines that keep a pool: its figures, for /metrics' pool gauges. */
  poolStats?(): PoolStats;
  /** What it offers other engines: one entry per capability its module `provides`. */
  readonly capabilities?: Partial<Capabilities>;
}
