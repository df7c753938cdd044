package dev.retsu.lock.examples.quarkus;

import io.agroal.api.AgroalDataSource;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.jboss.logging.Logger;

/**
 * Creates the jobs' tables when the application starts, if the database is up; a replica started
 * before its database leaves that to another replica (or to the next start) and still contends.
 */
@ApplicationScoped
public class Schema {

  private static final Logger LOG = Logger.getLogger(Schema.class);

  void create(@Observes StartupEvent event, AgroalDataSource dataSource) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS report_run (candidate text NOT NULL, ran_at timestamptz NOT"
              + " NULL)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS tenant_run (tenant text NOT NULL, candidate text NOT NULL,"
              + " ran_at timestamptz NOT NULL)");
    } catch (SQLException e) {
      LOG.warnf("report_run, tenant_run not created now (%s); the jobs need them", e.getMessage());
    }
  }
}
