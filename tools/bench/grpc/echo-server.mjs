// Echo server child for the gRPC benchmarks: `--engine grpc-js|grpc-js-tuned|http2 --socket PATH`; prints
// "ready" once bound. `grpc-js` is a stock grpc-js server, `grpc-js-tuned` grpc-js as @kemu/proto's
// createGrpcServer builds it, `http2` @kemu/proto's node:http2 engine.
// Run under tsx with the @kemu/source condition so @kemu/proto resolves to its sources.
import { parseArgs } from 'node:util';
import { serveEcho } from './echo-reference.mjs';

const { values } = parseArgs({ options: { engine: { type: 'string' }, socket: { type: 'string' } } });
const server = await serveEcho(values.engine, values.socket);
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  server.forceShutdown();
  process.exit(0);
});
