import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.util.HexFormat;
import java.util.Properties;

/**
 * What a BI tool's table browser (DBeaver, Metabase, ...) and a Java service
 * do over JDBC, against loch serve --pg (issue 38): log in with SCRAM over
 * TLS, list schemas, tables and columns through DatabaseMetaData, run a
 * prepared SELECT with a parameter and read a bytea. Each finding is
 * printed as one line that pgwire's TestJDBC checks.
 *
 * Usage: java -cp postgresql.jar:. JdbcBrowse URL USER PASSWORD
 */
public class JdbcBrowse {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", args[2]);
        try (Connection c = DriverManager.getConnection(args[0], props)) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product " + md.getDatabaseProductName() + " " + md.getDatabaseProductVersion());
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) {
                    System.out.println("schema " + rs.getString("TABLE_SCHEM"));
                }
            }
            try (ResultSet rs = md.getTableTypes()) {
                while (rs.next()) {
                    System.out.println("tabletype " + rs.getString(1));
                }
            }
            try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
                while (rs.next()) {
                    System.out.println("table " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE"));
                }
            }
            try (ResultSet rs = md.getColumns(null, "public", "pics", "%")) {
                while (rs.next()) {
                    System.out.println("column " + rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME")
                        + " " + rs.getInt("DATA_TYPE") + " " + rs.getInt("ORDINAL_POSITION") + " " + rs.getString("IS_NULLABLE"));
                }
            }
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "pics")) {
                while (rs.next()) {
                    System.out.println("primarykey " + rs.getString("COLUMN_NAME"));
                }
            }
            try (ResultSet rs = md.getIndexInfo(null, "public", "pics", false, true)) {
                while (rs.next()) {
                    System.out.println("index " + rs.getString("INDEX_NAME"));
                }
            }
            try (ResultSet rs = md.getImportedKeys(null, "public", "pics")) {
                while (rs.next()) {
                    System.out.println("foreignkey " + rs.getString("FKCOLUMN_NAME"));
                }
            }
            try (ResultSet rs = md.getTablePrivileges(null, "public", "pics")) {
                System.out.println("privileges listed");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id, 'pic ' || id AS caption, image FROM pics WHERE id = ? ORDER BY id")) {
                for (long id = 0; id < 2; id++) {
                    ps.setLong(1, id);
                    try (ResultSet rs = ps.executeQuery()) {
                        ResultSetMetaData rmd = rs.getMetaData();
                        while (rs.next()) {
                            byte[] image = rs.getBytes("image");
                            System.out.println("row " + rs.getLong(1) + " " + rs.getString(2) + " " + rmd.getColumnTypeName(3) + " "
                                + (image == null ? "null" : HexFormat.of().formatHex(image)));
                        }
                    }
                }
            }
            // A fetch size makes the driver read a large result a batch at a
            // time (a portal with a row limit, outside autocommit).
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM range(?) t(i)")) {
                ps.setFetchSize(2);
                ps.setInt(1, 5);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    System.out.println("count " + rs.getLong(1));
                }
            }
            c.commit();
        }
    }
}
