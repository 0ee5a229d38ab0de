import { sniffFile } from '../src/formats/sniff.ts';
import { catalogueOf } from '../src/engines/assembly.ts';
import { ENGINE_MODULES } from '../src/engines/index.ts';
import path from 'node:path';
const catalogue = catalogueOf(ENGINE_MODULES);
for (const file of process.argv.slice(2)) console.log(file, JSON.stringify(await sniffFile(file, path.basename(file), catalogue)));
