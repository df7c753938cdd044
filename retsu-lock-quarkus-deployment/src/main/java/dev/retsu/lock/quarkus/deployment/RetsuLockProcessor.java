package dev.retsu.lock.quarkus.deployment;

import dev.retsu.lock.quarkus.LeaderOnly;
import dev.retsu.lock.quarkus.RetsuLeaders;
import dev.retsu.lock.quarkus.internal.LeaderMeters;
import dev.retsu.lock.quarkus.internal.LeaderOnlyInterceptor;
import dev.retsu.lock.quarkus.internal.RetsuLockLiveness;
import dev.retsu.lock.quarkus.internal.RetsuLockReadiness;
import dev.retsu.lock.quarkus.internal.RetsuLockRecorder;
import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.arc.deployment.BeanArchiveIndexBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem;
import io.quarkus.arc.deployment.ValidationPhaseBuildItem.ValidationErrorBuildItem;
import io.quarkus.deployment.Capabilities;
import io.quarkus.deployment.Capability;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.metrics.MetricsCapabilityBuildItem;
import io.quarkus.runtime.metrics.MetricsFactory;
import jakarta.enterprise.inject.spi.DeploymentException;
import jakarta.interceptor.Interceptor;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.ClassInfo;
import org.jboss.jandex.DotName;
import org.jboss.jandex.MethodInfo;
import org.jboss.jandex.Type;

/**
 * The build steps of the retsu-lock extension: the feature, the beans (the leaders, the
 * {@code @LeaderOnly} interceptor, and the health checks and meters when the application has
 * SmallRye Health and Micrometer), the build-time check of {@code @LeaderOnly} methods, and the
 * uses handed to the application for its start-up check. Quarkus calls them; not an API.
 */
public class RetsuLockProcessor {

  /** Quarkus creates it. */
  public RetsuLockProcessor() {}

  static final String FEATURE = "retsu-lock";
  static final DotName LEADER_ONLY = DotName.createSimple(LeaderOnly.class);
  static final DotName INTERCEPTOR = DotName.createSimple(Interceptor.class);

  @BuildStep
  FeatureBuildItem feature() {
    return new FeatureBuildItem(FEATURE);
  }

  /** The leaders, the interceptor, and the health checks and meters the application can take. */
  @BuildStep
  void beans(
      Capabilities capabilities,
      Optional<MetricsCapabilityBuildItem> metrics,
      BuildProducer<AdditionalBeanBuildItem> beans) {
    AdditionalBeanBuildItem.Builder b =
        AdditionalBeanBuildItem.builder()
            .addBeanClasses(RetsuLeaders.class, LeaderOnlyInterceptor.class);
    if (capabilities.isPresent(Capability.SMALLRYE_HEALTH)) {
      b.addBeanClasses(RetsuLockReadiness.class, RetsuLockLiveness.class);
    }
    if (metrics.isPresent() && metrics.get().metricsSupported(MetricsFactory.MICROMETER)) {
      b.addBeanClasses(LeaderMeters.class);
    }
    beans.produce(b.setUnremovable().build());
  }

  /**
   * Every {@code @LeaderOnly} method returns void (on a standby it does not run, so there is
   * nothing to return), and is not static or private (it would not be intercepted, so it would run
   * on every instance).
   */
  @BuildStep
  void checkLeaderOnly(
      ValidationPhaseBuildItem validation,
      BeanArchiveIndexBuildItem index,
      BuildProducer<ValidationErrorBuildItem> errors) {
    List<Throwable> found = new ArrayList<>();
    for (AnnotationInstance a : uses(index)) {
      switch (a.target().kind()) {
        case METHOD:
          check(a.target().asMethod(), found);
          break;
        case CLASS:
          for (MethodInfo m : a.target().asClass().methods()) {
            if (!m.isConstructor()
                && !m.isStaticInitializer()
                && !m.isSynthetic()
                && !Modifier.isPrivate(m.flags())
                && !Modifier.isStatic(m.flags())) {
              check(m, found);
            }
          }
          break;
        default:
          break;
      }
    }
    if (!found.isEmpty()) {
      errors.produce(new ValidationErrorBuildItem(found));
    }
  }

  private static void check(MethodInfo m, List<Throwable> found) {
    String where = site(m);
    if (Modifier.isStatic(m.flags()) || Modifier.isPrivate(m.flags())) {
      found.add(
          new DeploymentException(
              "@LeaderOnly on "
                  + where
                  + " has no effect on a static or private method (it would run on every"
                  + " instance): make it a non-private instance method"));
    } else if (m.returnType().kind() != Type.Kind.VOID) {
      found.add(
          new DeploymentException(
              "@LeaderOnly method "
                  + where
                  + " must return void (on a standby it does not run), but returns "
                  + m.returnType()));
    }
  }

  /** Hands the uses to the application, which checks their names against the leaders at start. */
  @BuildStep
  @Record(ExecutionTime.RUNTIME_INIT)
  void leaderOnlySites(BeanArchiveIndexBuildItem index, RetsuLockRecorder recorder) {
    Map<String, String> sites = new TreeMap<>();
    Map<String, String> keys = new TreeMap<>();
    for (AnnotationInstance a : uses(index)) {
      String name = a.value().asString();
      AnnotationValue key = a.value("key");
      String site;
      switch (a.target().kind()) {
        case METHOD:
          site = site(a.target().asMethod());
          break;
        case CLASS:
          site = a.target().asClass().name().toString();
          break;
        default:
          continue;
      }
      sites.put(site, name);
      if (key != null && !key.asString().isEmpty()) {
        keys.put(site, key.asString());
      }
    }
    recorder.leaderOnlySites(sites, keys);
  }

  /** The uses of {@code @LeaderOnly} in the application, without the binding on our interceptor. */
  private static List<AnnotationInstance> uses(BeanArchiveIndexBuildItem index) {
    List<AnnotationInstance> uses = new ArrayList<>();
    for (AnnotationInstance a : index.getIndex().getAnnotations(LEADER_ONLY)) {
      ClassInfo owner =
          switch (a.target().kind()) {
            case CLASS -> a.target().asClass();
            case METHOD -> a.target().asMethod().declaringClass();
            default -> null;
          };
      if (owner != null && !owner.hasDeclaredAnnotation(INTERCEPTOR)) {
        uses.add(a);
      }
    }
    return uses;
  }

  private static String site(MethodInfo m) {
    return m.declaringClass().name() + "#" + m.name();
  }
}
