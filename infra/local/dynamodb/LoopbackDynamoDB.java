// Starts DynamoDB Local bound to 127.0.0.1 only. DynamoDB Local has no host
// option and its Jetty server listens on every interface; this launcher builds
// the server from the usual command-line flags, then sets the connector's host
// to loopback before starting it. Run with Java's single-file source launcher:
//   java -cp "DynamoDBLocal.jar:DynamoDBLocal_lib/*" LoopbackDynamoDB.java -inMemory -port 8000
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackDynamoDB {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    java.lang.reflect.Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector c : server.getConnectors()) {
      ((ServerConnector) c).setHost("127.0.0.1");
    }
    proxy.start();
    System.out.println("DynamoDB Local listening on 127.0.0.1");
    proxy.join();
  }
}
