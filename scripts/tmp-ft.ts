import { fileTypeFromFile } from 'file-type';
console.log(await fileTypeFromFile(process.argv[2]!));
