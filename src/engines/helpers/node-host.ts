// Moved to src/process/pool/node-host.ts; shim removed when the engines move into their folders.
export type { Handlers } from '../../process/pool/node-host.ts';
