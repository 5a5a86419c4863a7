import { randomUUID } from 'node:crypto';
import { TasklatchError } from '../core/errors.js';

/** A started tracing SDK: `shutdown` exports the spans still buffered, then stops. */
export interface TraceSdk {
  readonly protocol: TraceProtocol;
  shutdown(): Promise<void>;
}

/** The OTLP encodings the CLI ships an exporter for (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
export type TraceProtocol = 'http/protobuf' | 'http/json';

/**
 * Whether the standard OpenTelemetry environment asks for traces: `OTEL_TRACES_EXPORTER=otlp`,
 * or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
 * with no exporter named; never with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. An
 * exporter other than `otlp` is refused, as is the `grpc` protocol (no exporter for either is
 * shipped): a clear error at start, before anything runs. Returns the protocol, or null for none.
 */
export function traceProtocolFrom(env: NodeJS.ProcessEnv): TraceProtocol | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const other = exporters.find((name) => name !== 'otlp' && name !== 'none');
  if (other !== undefined) throw new TasklatchError('INVALID_INPUT', `OTEL_TRACES_EXPORTER=${other} is not supported: tasklatch exports traces with otlp only`);
  const endpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const wanted = exporters.includes('otlp') || (exporters.length === 0 && endpoint !== undefined);
  if (!wanted) return null;
  const protocol = (nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf').trim();
  if (protocol === 'http/protobuf' || protocol === 'http/json') return protocol;
  const hint = protocol === 'grpc' ? ': the grpc exporter is not shipped; send OTLP over HTTP (port 4318) instead' : '';
  throw new TasklatchError('INVALID_INPUT', `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported (http/protobuf or http/json)${hint}`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * Starts the official OpenTelemetry SDK for a long-running command when the environment asks
 * for traces (`traceProtocolFrom`), and registers it as the global tracer provider; null, and
 * nothing loaded, when it does not. The SDK packages are imported only then. The exporter reads
 * its own settings from the environment (endpoint, `OTEL_EXPORTER_OTLP_HEADERS`, timeouts), the
 * provider its sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`) and batch settings
 * (`OTEL_BSP_*`). The resource: `service.name` `tasklatch` unless `OTEL_SERVICE_NAME` (or
 * `OTEL_RESOURCE_ATTRIBUTES`) says otherwise, a `service.instance.id` of its own per process, and
 * the process's and host's attributes.
 */
export async function startTraceSdk(env: NodeJS.ProcessEnv = process.env): Promise<TraceSdk | null> {
  const protocol = traceProtocolFrom(env);
  if (protocol === null) return null;
  const [node, resources, exporter] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'tasklatch', 'service.instance.id': randomUUID() }))
    .merge(resources.detectResources({ detectors: [resources.processDetector, resources.hostDetector, resources.envDetector] }));
  const provider = new node.NodeTracerProvider({ resource, spanProcessors: [new node.BatchSpanProcessor(new exporter.OTLPTraceExporter())] });
  provider.register();
  return { protocol, shutdown: () => provider.shutdown() };
}
