// The flags every launcher of the service gives node: `npm start`, `npm run convertd`, the
// `convertd` command's first line, the Dockerfile, compose.yaml, the bench and the tests' service start
// (test/launch-flags.test.ts checks that they agree). A running process cannot set them on itself:
// v8.setFlagsFromString does not resize a heap that already exists.
//
// --max-semi-space-size=2 caps V8's young generation at 2 MiB per semi-space (the default grows
// to tens of MiB). Every socket read of an upload is a fresh 64 KiB buffer, freed only when the
// young generation is collected; with the default, 20 concurrent 25 MB uploads grew the service's
// RSS by up to 69 MiB, with the cap by 14-30 MiB, at the same upload throughput and a few per cent
// fewer progress requests per second (BENCHMARKS.md, change 19).
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
