// expnet-studio: the desktop workbench. Heavy work lives in the pages' workers;
// this file parses the command line, builds the window and, with --screenshot,
// renders it offscreen for tests and the README.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QScreen>
#include <QStyle>
#include <QStyleFactory>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "shell/mainwindow.h"
#include "shell/screenshot.h"
#include "shell/studiocontext.h"
#include "shell/studiopage.h"
#include "attention/attentionpage.h"
#include "caption/captionpage.h"
#include "compare/comparepage.h"
#include "datasets/datasetspage.h"
#include "runs/runspage.h"
#include "expnet/system/system.h"
#include "common/theme.h"
#include "training/trainingpage.h"

int main(int argc, char** argv) {
  expnet::restart_with_passive_openmp_wait(argv);
  expnet::keep_freed_memory_for_reuse();
  // A screenshot, --help and --version need no display: offscreen unless told otherwise.
  bool needsDisplay = true;
  for (int i = 1; i < argc; ++i) {
    const QByteArray arg(argv[i]);
    if (arg == "--screenshot" || arg == "--help" || arg == "-h" || arg == "--help-all" || arg == "--version" || arg == "-v")
      needsDisplay = false;
  }
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    if (!needsDisplay) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
      // Qt would abort; say what is missing instead.
      std::fprintf(stderr, "error: expnet-studio needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: run it "
                           "in a desktop session (or under Xvfb); on a server, use the `expnet` command line\n");
      return 1;
    }
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("expnet-studio"));
  QApplication::setOrganizationName(QStringLiteral("expnet"));
  QApplication::setApplicationVersion(QStringLiteral(EXPNET_VERSION));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/expnet/expnet-studio.svg")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ExpansionNet Studio: image captioning workbench"));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("Render offscreen, save a PNG and FILE.json, exit."), QStringLiteral("FILE"));
  QCommandLineOption page(QStringLiteral("page"), QStringLiteral("Page to show: caption, attention, training, datasets, runs, compare."), QStringLiteral("NAME"), QStringLiteral("caption"));
  QCommandLineOption open(QStringLiteral("open"), QStringLiteral("Image to open on the Caption page (repeatable); the first is also traced on the Attention page. With --page compare: an image to compare on."), QStringLiteral("IMAGE"));
  // The dataset a page works on: the Datasets page browses it, the Compare page evaluates on it.
  const QCommandLineOption
      dataset(QStringLiteral("dataset"), QStringLiteral("Datasets page: the dataset to open; Compare page: evaluate on it (file or folder)."), QStringLiteral("DATASET")),
      split(QStringLiteral("split"), QStringLiteral("Split of --dataset (train, restval, val, test, all): the Datasets page's filter and evaluation, the Compare page's evaluation."), QStringLiteral("SPLIT")),
      limit(QStringLiteral("limit"), QStringLiteral("At most N images of --dataset to evaluate (0 = all; Compare page default 200)."), QStringLiteral("N")),
      search(QStringLiteral("search"), QStringLiteral("Datasets page: show the images whose captions contain these words."), QStringLiteral("WORDS")),
      eval(QStringLiteral("eval"), QStringLiteral("Datasets page: evaluate this model (built-in name or checkpoint) per sample on --split, then sort worst first."), QStringLiteral("MODEL"));
  QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Run folder (or run store file) to follow on the Training page."), QStringLiteral("DIR"));
  QCommandLineOption store(QStringLiteral("store"), QStringLiteral("Runs page: also list the runs of this run store (runs.sqlite) or run folder, without remembering it (repeatable)."), QStringLiteral("FILE")),
      select(QStringLiteral("select"), QStringLiteral("Runs page: select these runs (names, comma-separated) to overlay their curves."), QStringLiteral("RUNS"));
  QCommandLineOption threads(QStringLiteral("threads"), QStringLiteral("CPU threads (0 = all cores)."), QStringLiteral("N"), QStringLiteral("0"));
  QCommandLineOption device(QStringLiteral("device"), QStringLiteral("cpu, cuda or cuda:N."), QStringLiteral("DEVICE"), QStringLiteral("cpu"));
  QCommandLineOption model(QStringLiteral("model"), QStringLiteral("Model preset (official, small, tiny, demo) or config JSON to preload; without model options the model loaded last is reloaded (the built-in demo model at first)."), QStringLiteral("MODEL"));
  QCommandLineOption checkpoint(QStringLiteral("checkpoint"), QStringLiteral("Checkpoint .pth to preload on the Caption page."), QStringLiteral("FILE"));
  QCommandLineOption vocab(QStringLiteral("vocab"), QStringLiteral("Vocabulary (.pickle or .json) of the checkpoint."), QStringLiteral("FILE"));
  QCommandLineOption beam(QStringLiteral("beam"), QStringLiteral("Attention page: beam width of the traced caption (1 = greedy)."), QStringLiteral("N"));
  QCommandLineOption word(QStringLiteral("word"), QStringLiteral("Attention page: the caption's word to show, 1 = the first."), QStringLiteral("N"));
  QCommandLineOption theme(QStringLiteral("theme"), QStringLiteral("Colours: system (the desktop's palette), light or dark."),
                           QStringLiteral("THEME"), QStringLiteral("system"));
  QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1024x640 (with --screenshot: the picture's)."),
                          QStringLiteral("WxH"));
  parser.addOptions({size, screenshot, page, open, dataset, split, limit, search, eval, run, store, select, threads, device, model, checkpoint, vocab, beam, word, theme});
  parser.process(app);
  // Before any widget exists: the pages read their colours when they are built.
  const QString themeName = parser.value(theme);
  if (themeName == QStringLiteral("dark") || themeName == QStringLiteral("light")) {
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(themeName == QStringLiteral("dark") ? Theme::darkPalette()
                                                                 : QApplication::style()->standardPalette());
  } else if (themeName != QStringLiteral("system")) {
    std::fprintf(stderr, "error: --theme '%s': use system, light or dark\n", qPrintable(themeName));
    return 1;
  }

  expnet::RuntimeOptions runtime;
  runtime.threads = parser.value(threads).toInt();
  runtime.device = parser.value(device).toStdString();
  try {
    expnet::apply_runtime(runtime);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }

  StudioContext context;
  context.setRuntime(QString::fromStdString(runtime.device), expnet::torch_threads());
  MainWindow window(&context);
  // 1280x800, or the screen's free area when it is smaller (a laptop; twice the scale).
  // A screenshot is 1280x800 (or --size) whatever the screen: reproducible.
  const QScreen* primary = QGuiApplication::primaryScreen();
  const QSize screen = primary && !parser.isSet(screenshot) ? primary->availableSize() : QSize(1280, 800);
  window.resize(std::min(1280, screen.width()), std::min(800, screen.height()));
  // Screenshots are reproducible: no user state.
  const bool restored = !parser.isSet(screenshot) && window.restoreSettings();
  // A first start on a screen smaller than the window and its frame (a laptop, twice the
  // scale): maximized, so that all of it, frame and status bar included, is on the screen.
  const bool maximize = !parser.isSet(screenshot) && !parser.isSet(size) && !restored &&
                        (screen.width() < 1280 + 20 || screen.height() < 800 + 60);
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split(QLatin1Char('x'));
    const int w = wh.value(0).toInt(), h = wh.size() == 2 ? wh.value(1).toInt() : 0;
    if (w < 200 || h < 150) {
      std::fprintf(stderr, "error: --size '%s': give WIDTHxHEIGHT in pixels, e.g. 1024x640\n", qPrintable(parser.value(size)));
      return 1;
    }
    window.resize(w, h);
  }
  if ((parser.isSet(page) || parser.isSet(screenshot)) && !window.showPage(parser.value(page))) {
    std::fprintf(stderr, "error: unknown page '%s': use one of %s\n", qPrintable(parser.value(page)),
                 qPrintable(window.pageIds().join(QStringLiteral(", "))));
    return 1;
  }
  auto* captionPage = qobject_cast<CaptionPage*>(window.page(QStringLiteral("caption")));
  auto* attentionPage = qobject_cast<AttentionPage*>(window.page(QStringLiteral("attention")));
  if (parser.isSet(beam)) attentionPage->setBeam(parser.value(beam).toInt());
  if (parser.isSet(word)) {
    const int index = parser.value(word).toInt() - 1;  // selectWord clamps to the caption's words
    QObject::connect(attentionPage, &AttentionPage::traceReady, attentionPage,
                     [attentionPage, index] { attentionPage->selectWord(index); }, Qt::SingleShotConnection);
  }
  if (parser.isSet(checkpoint) || parser.isSet(model) || parser.isSet(vocab)) {
    ModelRequest request;
    request.model = parser.value(model);
    request.checkpoint = parser.value(checkpoint);
    request.vocab = parser.value(vocab);
    captionPage->loadModel(request);  // in the background; --open images wait for it
  } else {
    // The model loaded last (remembered), else the built-in demo model: ready to caption from the first start.
    captionPage->loadLastModel();
  }
  auto* comparePage = qobject_cast<ComparePage*>(window.page(QStringLiteral("compare")));
  const bool comparing = parser.value(page) == QStringLiteral("compare");
  if (parser.isSet(open)) {
    if (comparing)
      comparePage->addPaths(parser.values(open));
    else
      captionPage->addPaths(parser.values(open));
  }
  auto* datasetsPage = qobject_cast<DatasetsPage*>(window.page(QStringLiteral("datasets")));
  if (parser.isSet(dataset) && comparing) {
    comparePage->evaluateDataset(parser.value(dataset), parser.isSet(split) ? parser.value(split) : QStringLiteral("test"),
                                 parser.isSet(limit) ? parser.value(limit).toInt() : 200);
  } else if (parser.isSet(dataset)) {
    // The Datasets page opens it (whichever page is shown), filtered and evaluated as asked.
    if (parser.isSet(split)) datasetsPage->setSplit(parser.value(split));
    if (parser.isSet(search)) datasetsPage->setSearch(parser.value(search));
    if (parser.isSet(eval))
      datasetsPage->evaluate(parser.value(eval), parser.isSet(split) ? parser.value(split) : QStringLiteral("val"),
                             parser.isSet(limit) ? parser.value(limit).toInt() : 0);
    datasetsPage->openDataset(parser.value(dataset));
  } else if (parser.isSet(search) || parser.isSet(eval)) {
    std::fprintf(stderr, "error: --search and --eval need --dataset (the Datasets page's dataset)\n");
    return 1;
  }
  if (parser.isSet(run) && !qobject_cast<TrainingPage*>(window.page(QStringLiteral("training")))->openRun(parser.value(run))) {
    std::fprintf(stderr, "error: --run '%s': not a run folder (with runs.sqlite) or run store file\n",
                 qPrintable(parser.value(run)));
    return 1;
  }
  auto* runsPage = qobject_cast<RunsPage*>(window.page(QStringLiteral("runs")));
  for (const QString& file : parser.values(store))
    if (!runsPage->openStore(file, false)) {
      std::fprintf(stderr, "error: --store '%s': not a run store file (runs.sqlite) or a run folder with one\n", qPrintable(file));
      return 1;
    }
  if (parser.isSet(select)) runsPage->selectRuns(parser.value(select).split(QLatin1Char(','), Qt::SkipEmptyParts));
  if (maximize)
    window.showMaximized();
  else
    window.show();

  if (parser.isSet(screenshot)) {
    ScreenshotRequest request;
    request.file = parser.value(screenshot);
    return takeScreenshot(window, context, request);
  }
  return app.exec();
}
