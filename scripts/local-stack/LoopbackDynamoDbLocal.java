import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * Starts DynamoDB Local (the jar inside npm amplify-dynamodb-simulator) bound to one address. The jar's
 * own entry point has no host option and listens on every interface; this launcher builds the same
 * server from the same command-line arguments, sets the host on its Jetty connector before it starts,
 * and starts it. Run with the JDK's source launcher (`java LoopbackDynamoDbLocal.java …`, JEP 330), so
 * nothing is compiled ahead of time. The address comes from -Dswitchboard.host (default 127.0.0.1).
 */
public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    String host = System.getProperty("switchboard.host", "127.0.0.1");
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) ((ServerConnector) connector).setHost(host);
    proxy.start();
  }
}
