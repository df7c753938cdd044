package dev.retsu.lock.cli;

import java.io.Console;
import java.lang.reflect.Method;

/** Where an interactive confirmation comes from. */
interface Terminal {

  /** {@return whether a person can answer: standard input and output are a terminal} */
  boolean interactive();

  /**
   * Asks and reads one line.
   *
   * @param prompt the question
   * @return the answer, or null at end of input
   */
  String readLine(String prompt);

  /** No terminal: nobody can confirm. */
  Terminal NONE =
      new Terminal() {
        @Override
        public boolean interactive() {
          return false;
        }

        @Override
        public String readLine(String prompt) {
          return null;
        }
      };

  /**
   * The process's console when standard input and output are a terminal, else {@link #NONE}. On
   * Java 22 and later {@code System.console()} is present even when redirected, so {@code
   * Console.isTerminal()} decides there.
   *
   * @return the terminal
   */
  static Terminal system() {
    Console console = System.console();
    if (console == null) {
      return NONE;
    }
    try {
      Method isTerminal = Console.class.getMethod("isTerminal");
      if (!Boolean.TRUE.equals(isTerminal.invoke(console))) {
        return NONE;
      }
    } catch (NoSuchMethodException e) {
      // Java 17 to 21: a console exists only for a terminal
    } catch (ReflectiveOperationException e) {
      return NONE;
    }
    return new Terminal() {
      @Override
      public boolean interactive() {
        return true;
      }

      @Override
      public String readLine(String prompt) {
        return console.readLine("%s", prompt);
      }
    };
  }
}
