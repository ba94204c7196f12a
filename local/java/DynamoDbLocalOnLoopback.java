// DynamoDB Local bound to one address (loopback) instead of every interface.
//
// DynamoDB Local has no bind option: its DynamoDBProxyServer builds a Jetty Server from a port alone, whose one
// connector listens on all interfaces, and nothing (option, system property) sets that connector's host. This
// launcher builds the server exactly as DynamoDB Local's own main does (same command line, same handler), sets the
// host on the connector before it starts, then starts it as that main does. It runs with `java <this file>`
// (source-file mode, no build step); local/dynamodb-local.ts starts it and falls back to the plain jar, loudly,
// where the Java runtime cannot compile source files.
import java.io.File;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.CommandLineInput;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.monitoring.Telemetry;
import software.amazon.dynamodb.services.local.monitoring.TelemetryUtil;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class DynamoDbLocalOnLoopback {
  public static void main(String[] args) throws Exception {
    String host = System.getProperty("crumbs.dynamodb.host", "127.0.0.1");
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) throw new IllegalStateException("DynamoDB Local built a server without a connector");
    for (Connector connector : connectors) ((ServerConnector) connector).setHost(host);
    // As DynamoDB Local's main: telemetry is configured (on unless -disableTelemetry) before the server starts.
    try {
      CommandLineInput input = new CommandLineInput(args);
      input.init();
      Telemetry.configureTelemetry(
          TelemetryUtil.getSetupType(new File("/.dockerenv"), new File("pom.xml")),
          ServerRunner.getSetupMode(input),
          TelemetryUtil.isTelemetryEnabled(input.isDisableTelemetry()));
    } catch (Exception error) {
      // main only logs this at debug level too.
    }
    proxy.start();
  }
}
