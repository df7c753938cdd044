package dev.retsu.lock.testing;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.IdentifierTree;
import com.sun.source.tree.ImportTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.NestingKind;
import javax.lang.model.element.PackageElement;
import javax.lang.model.element.TypeElement;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * One source file that holds snippet regions, attributed by javac (on the running test's class
 * path) so that a region's names are known exactly: which types it names (and so which imports a
 * reader needs to paste it), which static members it reaches through a static import, and which
 * local variables and fields it uses without declaring them. Not thread-safe; used by {@link
 * ReadmeSnippets}.
 */
final class SnippetSource {

  private static final Pattern REGION =
      Pattern.compile("// snippet:([a-z0-9-]+/[a-z0-9-]+)\\n(.*?)// end-snippet", Pattern.DOTALL);

  /** What one region needs from its surroundings. */
  record Region(
      String name,
      String code,
      Set<String> imports,
      Set<String> staticImports,
      Set<String> freeVariables,
      Set<String> declaredVariables,
      Set<String> declaredTypes) {}

  private final Path path;
  private final Map<String, Region> regions = new LinkedHashMap<>();

  private SnippetSource(Path path) {
    this.path = path;
  }

  /**
   * Attributes a source file and records each of its snippet regions.
   *
   * @param path the source file
   * @return the regions, by name
   * @throws AssertionError when javac cannot attribute the file on this class path
   */
  static SnippetSource of(Path path) {
    SnippetSource source = new SnippetSource(path);
    source.attribute();
    return source;
  }

  Map<String, Region> regions() {
    return regions;
  }

  Path path() {
    return path;
  }

  private void attribute() {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      throw new AssertionError("the snippet check needs a JDK (javax.tools), not a JRE");
    }
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    try (StandardJavaFileManager files =
        javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
      List<String> options =
          List.of(
              "-proc:none",
              "-implicit:none",
              "-Xlint:none",
              "-classpath",
              System.getProperty("java.class.path"));
      JavacTask task =
          (JavacTask)
              javac.getTask(
                  null, files, diagnostics, options, null, files.getJavaFileObjects(path));
      Iterable<? extends CompilationUnitTree> units = task.parse();
      task.analyze();
      List<String> errors = new ArrayList<>();
      for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
        if (d.getKind() == Diagnostic.Kind.ERROR) {
          errors.add("line " + d.getLineNumber() + ": " + d.getMessage(null));
        }
      }
      if (!errors.isEmpty()) {
        throw new AssertionError(
            "the snippet check cannot attribute " + path + " on the test class path: " + errors);
      }
      Trees trees = Trees.instance(task);
      for (CompilationUnitTree unit : units) {
        String text = unit.getSourceFile().getCharContent(true).toString();
        Matcher m = REGION.matcher(text);
        while (m.find()) {
          regions.put(m.group(1), scan(trees, unit, m.group(1), m.group(2), m.start(2), m.end(2)));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + path, e);
    }
  }

  private static Region scan(
      Trees trees, CompilationUnitTree unit, String name, String code, int from, int to) {
    SourcePositions positions = trees.getSourcePositions();
    Set<String> staticallyImported = new HashSet<>();
    for (ImportTree i : unit.getImports()) {
      if (i.isStatic()) {
        staticallyImported.add(i.getQualifiedIdentifier().toString());
      }
    }
    Set<String> imports = new TreeSet<>();
    Set<String> staticImports = new TreeSet<>();
    Set<Element> declared = new HashSet<>();
    Set<String> declaredNames = new TreeSet<>();
    Set<String> declaredTypes = new TreeSet<>();
    Map<Element, String> used = new LinkedHashMap<>();
    new TreePathScanner<Void, Void>() {
      @Override
      public Void scan(Tree tree, Void unused) {
        if (tree == null) {
          return null;
        }
        long start = positions.getStartPosition(unit, tree);
        long end = positions.getEndPosition(unit, tree);
        if (end >= 0 && (end <= from || start >= to)) {
          return null; // wholly outside the region
        }
        return super.scan(tree, unused);
      }

      @Override
      public Void visitVariable(VariableTree node, Void unused) {
        if (inside(positions.getStartPosition(unit, node))) {
          Element e = trees.getElement(getCurrentPath());
          if (e != null) {
            declared.add(e);
            declaredNames.add(node.getName().toString());
          }
        }
        return super.visitVariable(node, unused);
      }

      @Override
      public Void visitClass(ClassTree node, Void unused) {
        if (inside(positions.getStartPosition(unit, node))
            && trees.getElement(getCurrentPath()) instanceof TypeElement type
            && type.getNestingKind() == NestingKind.TOP_LEVEL) {
          declaredTypes.add(type.getQualifiedName().toString()); // the block shows the whole class
        }
        return super.visitClass(node, unused);
      }

      @Override
      public Void visitIdentifier(IdentifierTree node, Void unused) {
        if (inside(positions.getStartPosition(unit, node))) {
          String simple = node.getName().toString();
          Element e = trees.getElement(getCurrentPath());
          if (e != null && !simple.equals("this") && !simple.equals("super")) {
            if (e instanceof TypeElement type) {
              needsImport(type, getCurrentPath()).ifPresent(imports::add);
            } else if (isLocal(e.getKind())) {
              used.put(e, simple);
            } else if (e.getModifiers().contains(Modifier.STATIC)
                && e.getEnclosingElement() instanceof TypeElement owner
                && (staticallyImported.contains(owner.getQualifiedName() + "." + simple)
                    || staticallyImported.contains(owner.getQualifiedName() + ".*"))) {
              staticImports.add(owner.getQualifiedName() + "." + simple);
            } else if (e.getKind() == ElementKind.FIELD) {
              // a field of the surrounding code, by its simple name: the reader has it only if the
              // block declares it (the block shows the whole class)
              used.put(e, simple);
            }
          }
        }
        return super.visitIdentifier(node, unused);
      }

      private boolean inside(long position) {
        return position >= from && position < to;
      }

      private java.util.Optional<String> needsImport(TypeElement type, TreePath at) {
        if (type.getNestingKind().isNested()) {
          // A member type by its simple name: imported, or in scope because the code is inside
          // its enclosing type (then the reader writes the same code inside their own class).
          for (TreePath p = at; p != null; p = p.getParentPath()) {
            Element enclosing = trees.getElement(p);
            if (enclosing != null && enclosing.equals(type.getEnclosingElement())) {
              return java.util.Optional.empty();
            }
          }
        } else if (packageOf(type).equals("java.lang")) {
          return java.util.Optional.empty();
        }
        if (declaredIn(type, unit, trees)) {
          return java.util.Optional.empty(); // the source's own class: the reader's code
        }
        return java.util.Optional.of(type.getQualifiedName().toString());
      }
    }.scan(unit, null);
    Set<String> free = new TreeSet<>();
    used.forEach(
        (e, simple) -> {
          if (!declared.contains(e)) {
            free.add(simple);
          }
        });
    return new Region(name, code, imports, staticImports, free, declaredNames, declaredTypes);
  }

  private static boolean isLocal(ElementKind kind) {
    return switch (kind) {
      case LOCAL_VARIABLE, PARAMETER, EXCEPTION_PARAMETER, RESOURCE_VARIABLE, BINDING_VARIABLE ->
          true;
      default -> false;
    };
  }

  private static String packageOf(TypeElement type) {
    Element e = type;
    while (!(e instanceof PackageElement)) {
      e = e.getEnclosingElement();
    }
    return ((PackageElement) e).getQualifiedName().toString();
  }

  private static boolean declaredIn(TypeElement type, CompilationUnitTree unit, Trees trees) {
    TreePath path = trees.getPath(type);
    return path != null && path.getCompilationUnit() == unit;
  }
}
