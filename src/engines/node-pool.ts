// Moved to src/process/pool/node-program.ts; shim removed when the engines move into their folders.
export * from '../process/pool/node-program.ts';
