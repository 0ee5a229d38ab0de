// The pool runtime's public face: the supervised pool of warm processes (supervisor.ts) and what
// it runs (messaging.ts), and the pool of our own Node code (node-program.ts).
export { ProcessPool, type PoolOptions, type PoolStats } from './supervisor.ts';
export { PYTHON_PROTOCOL, type PooledProgram, type Reply } from './messaging.ts';
export { createNodePool, type NodePoolOptions, type NodeProgramOptions } from './node-program.ts';
