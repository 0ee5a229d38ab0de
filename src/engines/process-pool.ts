// Moved to src/process/pool/; shim removed when the engines move into their folders.
export * from '../process/pool/index.ts';
