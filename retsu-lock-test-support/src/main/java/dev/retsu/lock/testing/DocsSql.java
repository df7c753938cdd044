package dev.retsu.lock.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The SQL of a page: its {@code ```sql} blocks, split into statements, and the tables its Java
 * blocks' SQL strings name. Tests use it so that a reader who runs a page's DDL and then its code
 * gets what the build ran: a snippet's test creates its tables with {@link #createTable(Path,
 * String)} from the page, never with DDL of its own. Stateless; thread-safe.
 */
public final class DocsSql {

  private static final Pattern SQL_BLOCK = Pattern.compile("```sql\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern STRING_LITERAL = Pattern.compile("\"((?:[^\"\\\\\\n]|\\\\.)*)\"");
  private static final Pattern TABLE_USE =
      Pattern.compile(
          "(?i)(?<!DO )\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|FROM|JOIN)\\s+([a-z_][a-z0-9_]*)");
  private static final Pattern CREATE_TABLE =
      Pattern.compile("(?i)^\\s*CREATE\\s+TABLE\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?([a-z_][a-z0-9_]*)");

  /** Words after FROM or UPDATE in SQL text that are not tables. */
  private static final Set<String> NOT_TABLES = Set.of("set", "select", "lateral", "only");

  private DocsSql() {}

  /**
   * Returns the statements of the page's {@code ```sql} blocks, in page order: each block split
   * after every {@code ;} that ends a line, with lines that are only comments dropped.
   *
   * @param page the page
   * @return the statements, without their closing {@code ;}
   */
  public static List<String> statements(Path page) {
    List<String> out = new ArrayList<>();
    Matcher m = SQL_BLOCK.matcher(read(page));
    while (m.find()) {
      StringBuilder current = new StringBuilder();
      for (String line : m.group(1).split("\n")) {
        if (line.strip().startsWith("--") || line.isBlank()) {
          continue;
        }
        current.append(line).append('\n');
        String code = line.replaceAll("--.*$", "").stripTrailing();
        if (code.endsWith(";")) {
          String statement = current.toString().strip();
          out.add(statement.substring(0, statement.lastIndexOf(';')).strip());
          current.setLength(0);
        }
      }
      if (!current.toString().isBlank()) {
        out.add(current.toString().strip());
      }
    }
    return out;
  }

  /**
   * Returns the tables the page's {@code CREATE TABLE} statements create, in lower case.
   *
   * @param page the page
   * @return the table names
   */
  public static Set<String> tablesCreated(Path page) {
    Set<String> out = new TreeSet<>();
    for (String s : statements(page)) {
      Matcher m = CREATE_TABLE.matcher(s);
      if (m.find()) {
        out.add(m.group(1).toLowerCase(Locale.ROOT));
      }
    }
    return out;
  }

  /**
   * Returns the page's {@code CREATE TABLE} statement for one table.
   *
   * @param page the page
   * @param table the table's name
   * @return the statement, as the page shows it
   * @throws AssertionError when the page creates no such table
   */
  public static String createTable(Path page, String table) {
    for (String s : statements(page)) {
      Matcher m = CREATE_TABLE.matcher(s);
      if (m.find() && m.group(1).equalsIgnoreCase(table)) {
        return s;
      }
    }
    throw new AssertionError(
        page
            + " shows no CREATE TABLE "
            + table
            + " in a sql block; it creates "
            + tablesCreated(page));
  }

  /**
   * Returns the tables that the SQL in the page's Java blocks reads or writes (the word after
   * {@code INSERT INTO}, {@code UPDATE}, {@code DELETE FROM}, {@code FROM} or {@code JOIN} in a
   * string literal), in lower case, without the server's own ({@code pg_*}, {@code
   * information_schema}).
   *
   * @param page the page
   * @return the table names
   */
  public static Set<String> tablesTheCodeUses(Path page) {
    Set<String> out = new TreeSet<>();
    Matcher block = JAVA_BLOCK.matcher(read(page));
    while (block.find()) {
      Matcher literal = STRING_LITERAL.matcher(block.group(1));
      while (literal.find()) {
        Matcher use = TABLE_USE.matcher(literal.group(1));
        while (use.find()) {
          String name = use.group(1).toLowerCase(Locale.ROOT);
          if (!name.startsWith("pg_")
              && !name.equals("information_schema")
              && !NOT_TABLES.contains(name)) {
            out.add(name);
          }
        }
      }
    }
    return out;
  }

  private static String read(Path page) {
    try {
      return Files.readString(page);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + page, e);
    }
  }
}
