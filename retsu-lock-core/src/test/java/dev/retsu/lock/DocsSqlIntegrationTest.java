package dev.retsu.lock;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retsu.lock.testing.DocsSql;
import dev.retsu.lock.testing.PostgresExtension;
import dev.retsu.lock.testing.ReadmeSnippets;
import dev.retsu.lock.testing.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The SQL the pages (README, docs/, module READMEs) give a reader: every table a page's Java code
 * reads or writes is created by that page's own {@code sql} block, and every statement of every
 * {@code sql} block runs on PostgreSQL, in page order, each page in a schema of its own that is
 * rolled back afterwards. The snippets' own tests create their tables from the pages too, so the
 * DDL a reader runs is the DDL the code was run against.
 */
@ExtendWith(PostgresExtension.class)
class DocsSqlIntegrationTest {

  private static final Path ROOT = Path.of("..");

  @Test
  void everyTableThatAPagesCodeUsesIsCreatedOnThatPage() {
    Map<String, Set<String>> missing = new TreeMap<>();
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      Set<String> tables = new TreeSet<>(DocsSql.tablesTheCodeUses(page));
      tables.removeAll(DocsSql.tablesCreated(page));
      if (!tables.isEmpty()) {
        missing.put(ROOT.relativize(page).toString(), tables);
      }
    }
    assertThat(missing)
        .as(
            "tables a page's Java code uses that no CREATE TABLE in a sql block of the page creates")
        .isEmpty();
  }

  @Test
  void everySqlBlockOfEveryPageRunsOnPostgres(TestDatabase db) throws SQLException {
    List<String> failures = new ArrayList<>();
    int ran = 0;
    for (Path page : ReadmeSnippets.pages(ROOT)) {
      List<String> statements = DocsSql.statements(page);
      if (statements.isEmpty()) {
        continue;
      }
      try (Connection c = db.connect()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("CREATE SCHEMA docs_page");
          s.execute("SET LOCAL search_path = docs_page");
          boolean roleMade = false;
          for (String statement : statements) {
            String sql = placeholdersFilledIn(statement, db.name());
            if (sql.contains("app_role") && !roleMade) {
              s.execute("CREATE ROLE app_role"); // the page's role for the candidates
              roleMade = true;
            }
            Savepoint before = c.setSavepoint();
            try {
              s.execute(sql);
              ran++;
            } catch (SQLException e) {
              c.rollback(before);
              failures.add(ROOT.relativize(page) + ": " + statement + "\n  -> " + e.getMessage());
            }
          }
        } finally {
          c.rollback();
        }
      }
    }
    assertThat(failures).as("sql statements of the pages that PostgreSQL refused").isEmpty();
    assertThat(ran).as("statements run").isGreaterThan(5);
  }

  /**
   * The placeholders the pages write for the reader's own values: psql's {@code :key} variable, the
   * database {@code app} and the candidates' role {@code app_role}.
   */
  private static String placeholdersFilledIn(String statement, String database) {
    return statement
        .replace(":key::bigint", "42::bigint")
        .replace("DATABASE app ", "DATABASE \"" + database + "\" ");
  }
}
