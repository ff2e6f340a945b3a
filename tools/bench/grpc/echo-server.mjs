// Echo server child for the gRPC benchmarks: `--engine grpc-js|grpc-js-tuned|http2 --socket PATH`; prints
// "ready" once bound. `grpc-js` is a stock grpc-js server, `grpc-js-tuned` grpc-js as @kemu/proto's
// createGrpcServer builds it, `http2` @kemu/proto's node:http2 engine.
// Run under tsx with the @kemu/source condition so @kemu/proto resolves to its sources.
import { parseArgs } from 'node:util';
import { createGrpcServer, grpc } from '@kemu/proto';

const { values } = parseArgs({ options: { engine: { type: 'string' }, socket: { type: 'string' } } });
const id = (b) => b;
const def = {
  Echo: {
    path: '/bench.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
};
const server =
  values.engine === 'grpc-js'
    ? new grpc.Server()
    : createGrpcServer(values.engine === 'grpc-js-tuned' ? 'grpc-js' : 'http2');
if (!['grpc-js', 'grpc-js-tuned', 'http2'].includes(values.engine)) throw new Error(`unknown engine ${values.engine}`);
server.addService(def, { Echo: (call, cb) => cb(null, call.request) });
server.bindAsync(`unix://${values.socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.stdout.write('ready\n');
});
process.on('SIGTERM', () => {
  server.forceShutdown();
  process.exit(0);
});
