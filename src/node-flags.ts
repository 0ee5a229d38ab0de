// The flags every launcher of the service gives node: `npm start`, `npm run convertd`, the
// `convertd` command's first line, the Dockerfile, compose.yaml, the bench and the tests' service
// start (test/launch-flags.test.ts checks that they agree). A running process cannot reliably set
// them on itself (v8.setFlagsFromString after start is documented as unpredictable).
//
// --expose-gc lets the upload path ask for a young-generation collection every 16 MiB received,
// which frees the socket buffers of finished chunks (src/http/upload-garbage.ts). Without it, 20
// concurrent 25 MB uploads grew the service's RSS by up to 69 MiB; with it by 2-15 MiB
// (BENCHMARKS.md, change 19).
export const SERVICE_NODE_FLAGS: readonly string[] = ['--expose-gc'];
