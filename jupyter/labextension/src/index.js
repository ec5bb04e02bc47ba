// What JupyterLab's and RISE's settings cannot do for this lecture (jupyter/README.md):
// 1. a speaker note (a markdown cell of slide type "notes", its source hidden) stays collapsed when
//    it runs: Lab's own executor shows every markdown cell it runs, so Run All, Alt+R and Shift+Enter
//    opened all the notes, and autosave wrote that into the .ipynb and its py_src/ twin;
// 2. a collapsed markdown cell's one-line label shows as text ("For the presenter"), not as its
//    markdown source ("**For the presenter**");
// 3. every figure carries alt text in Lab and on a live slide: its cell's `caption` metadata, else
//    the output's own (image/png "alt", written by make regen); Lab's image renderer sets none.
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

export default [executor, views];
