// What JupyterLab's and RISE's settings cannot do for this lecture (jupyter/README.md):
// 1. a speaker note (a markdown cell of slide type "notes", its source hidden) stays collapsed when
//    it runs: Lab's own executor shows every markdown cell it runs, so Run All, Alt+R and Shift+Enter
//    opened all the notes, and autosave wrote that into the .ipynb and its py_src/ twin;
// 2. a collapsed markdown cell's one-line label shows as text ("For the presenter"), not as its
//    markdown source ("**For the presenter**");
// 3. every figure carries alt text in Lab and on a live slide: its cell's `caption` metadata, else
//    the output's own (image/png "alt", written by make regen); Lab's image renderer sets none;
// 4. the slideshow runs the notebook's core cells when it opens: Alt+R opens it at once
//    (jupyter/labconfig), and its title slide is up while the code cells not tagged "deeper" run,
//    in order, so that a slide's Shift+Enter finds every core cell before it run; the Going-deeper
//    cells stay un-run until the student runs them.
import { INotebookCellExecutor, INotebookTracker, runCell } from '@jupyterlab/notebook';

function isNote(model) {
  return model.type === 'markdown' && (model.getMetadata('slideshow') || {}).slide_type === 'notes';
}

const executor = {
  id: 'lecture-classroom:cell-executor',
  description: 'Runs cells as Lab does, but leaves a hidden speaker note hidden.',
  autoStart: true,
  provides: INotebookCellExecutor,
  activate: () => Object.freeze({
    runCell: options => {
      const { cell } = options;
      if (isNote(cell.model) && cell.inputHidden) {
        cell.rendered = true; // what Lab does to a markdown cell, without showing its source
        options.onCellExecuted({ cell, success: true });
        return Promise.resolve(true);
      }
      return runCell(options);
    }
  })
};

// A collapsed cell's label is the first line of its source: without its markdown marks.
function label(text) {
  return text.replace(/^\s*#+\s+/, '').replace(/(\*\*|__|\*|_|`)(.+?)\1/g, '$2').trim();
}

function caption(panel, node) {
  const cellNode = node.closest('.jp-Cell');
  const cell = panel.content.widgets.find(widget => widget.node === cellNode);
  if (!cell) {
    return null;
  }
  const own = cell.model.getMetadata('caption');
  if (own) {
    return own;
  }
  const outputs = cell.model.outputs;
  for (let i = 0; outputs && i < outputs.length; i++) {
    const alt = ((outputs.get(i).metadata || {})['image/png'] || {}).alt;
    if (alt) {
      return alt;
    }
  }
  return null;
}

function tidy(panel) {
  const root = panel.content.node;
  for (const text of root.querySelectorAll('.jp-MarkdownCell .jp-InputPlaceholder .jp-PlaceholderText')) {
    const shown = label(text.innerText);
    if (shown !== text.innerText) {
      text.innerText = shown;
    }
    text.classList.add('lecture-label');
  }
  for (const img of root.querySelectorAll('.jp-OutputArea-output img:not([alt])')) {
    const alt = caption(panel, img);
    if (alt) {
      img.alt = alt;
    }
  }
}

function watch(panel) {
  let queued = false;
  const observer = new MutationObserver(() => {
    if (!queued) {
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        if (!panel.isDisposed) {
          tidy(panel);
        }
      });
    }
  });
  observer.observe(panel.content.node, { childList: true, subtree: true, characterData: true });
  panel.disposed.connect(() => observer.disconnect());
  tidy(panel);
}

const views = {
  id: 'lecture-classroom:views',
  description: 'Collapsed cells labelled as text, figures with alt text.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app, tracker) => {
    tracker.widgetAdded.connect((_, panel) => watch(panel));
    tracker.forEach(watch);
  }
};

// The slideshow (RISE's own page, app.name "Rise") runs the core cells once it shows its first
// slide. All are sent at once, in order, as Run All sends them: the kernel runs them one after
// another, and a slide's Shift+Enter meanwhile queues behind them. <body data-lecture-core> says
// where the run is: waiting (for the kernel and the first slide), running, done, or failed (a cell
// raised; the kernel then skips the rest, as in Run All).
function isCore(cell) {
  return cell.model.type === 'code' && !(cell.model.getMetadata('tags') || []).includes('deeper');
}

function firstSlide() {
  return new Promise(resolve => {
    const timer = setInterval(() => {
      if (document.querySelector('.reveal.ready .slides section.present')) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
  });
}

async function runCore(panel) {
  const state = document.body.dataset;
  state.lectureCore = 'waiting';
  await panel.context.ready;
  await panel.sessionContext.ready;
  await firstSlide();
  if (panel.isDisposed) {
    return;
  }
  state.lectureCore = 'running';
  const notebook = panel.content;
  const runs = notebook.widgets.filter(isCore).map(cell => runCell({
    cell,
    notebook: notebook.model,
    notebookConfig: notebook.notebookConfig,
    onCellExecuted: () => {},
    onCellExecutionScheduled: () => {},
    sessionContext: panel.sessionContext
  }));
  // a cell run again meanwhile (Shift+Enter) cancels its first run: that is no failure
  const results = await Promise.allSettled(runs);
  state.lectureCore = results.some(r => r.status === 'rejected') ? 'failed' : 'done';
}

const core = {
  id: 'lecture-classroom:core-run',
  description: 'The slideshow runs the core cells (not tagged deeper) behind its title slide.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app, tracker) => {
    if (app.name !== 'Rise') {
      return;
    }
    tracker.widgetAdded.connect((_, panel) => {
      runCore(panel).catch(reason => {
        document.body.dataset.lectureCore = 'failed';
        console.warn('lecture-classroom: the core cells did not run', reason);
      });
    });
  }
};

export default [executor, views, core];
