import { describe, expect, it } from 'vitest';
import { startTraceSdk, traceProtocolFrom } from '../../src/cli/trace-sdk.js';
import { runCli } from '../support/cli.js';

describe('traceProtocolFrom', () => {
  it('turns traces on only when the OpenTelemetry environment asks', () => {
    expect(traceProtocolFrom({})).toBeNull();
    expect(traceProtocolFrom({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeNull();
    expect(traceProtocolFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http/protobuf');
    expect(traceProtocolFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(traceProtocolFrom({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe('http/protobuf');
    expect(traceProtocolFrom({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe(
      'http/json',
    );
    expect(traceProtocolFrom({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBeNull();
    expect(traceProtocolFrom({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
  });

  it('refuses what it has no exporter for, saying so', () => {
    expect(() => traceProtocolFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /grpc exporter is not shipped/,
    );
    expect(() => traceProtocolFrom({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER=zipkin is not supported/);
  });

  it('loads nothing when unset', async () => {
    expect(await startTraceSdk({})).toBeNull();
  });
});

describe('tasklatch serve with OTEL_EXPORTER_OTLP_PROTOCOL=grpc', () => {
  it('stops at start with a clear error', async () => {
    const out = await runCli(['serve', '--store', 'memory:'], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
    });
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported .*grpc exporter is not shipped/);
  });
});
